"""Settings: defaults from configs/, overrides, the CPU section, and refused values."""

import pytest

from harness.settings import Settings


def test_defaults_follow_the_evaluation_protocol():
    timing = Settings.load().timing
    assert timing.sync == "device" and timing.warm == "torch" and timing.host_launch == "hidden"
    assert timing.rehearse is True
    assert timing.rehearse_late is True  # on GPU runs (Sampling.late); runs 95-103
    assert Settings.load().integrity.sleep_measured is True  # GPU runs; run 99


def test_cpu_section_replaces_gpu_values():
    settings = Settings.load()
    assert settings.for_device("cpu").timing.min_calls < settings.timing.min_calls
    assert settings.for_device("cuda").timing.min_calls == settings.timing.min_calls


@pytest.mark.parametrize("key,value", [("sync", "stream"), ("warm", "nothing"),
                                       ("host_launch", "some"), ("rehearse", "sometimes"),
                                       ("rehearse", 1), ("min_samples", 0),
                                       ("min_samples", 2.5), ("judge_spin_seconds", -1),
                                       ("judge_spin_seconds", "yes"),
                                       ("long_sample_factor", 1), ("long_sample_factor", "true"),
                                       ("long_sample_factor", "four"),
                                       ("long_sample_note", -0.1), ("long_sample_note", "false"),
                                       ("window_fill_bytes", 0), ("window_fill_bytes", 1.5),
                                       ("window_fill_bytes", "true"),
                                       ("mask_cpu_inputs", 1), ("mask_cpu_inputs", "maybe")])
def test_unknown_choices_are_refused(tmp_path, key, value):
    extra = tmp_path / "bad.yaml"
    extra.write_text(f"timing:\n  {key}: {value}\n")
    with pytest.raises(ValueError, match=key):
        Settings.load(extra)


@pytest.mark.parametrize("section,key,value", [
    ("worker", "hold_cpu", "1"), ("worker", "hold_cpu", "yes_please"), ("worker", "hold_cpu", "0.5"),
    # true, false or null; a whole number of 3 or more
    ("integrity", "confirm_probes", "2"), ("integrity", "confirm_probes", "true"),
    ("integrity", "confirm_probes", "3.5"),
    ("integrity", "sleep_measured", '"no"'), ("integrity", "sleep_measured", "1"),
])
def test_refused_values_of_other_sections(tmp_path, section, key, value):
    extra = tmp_path / "bad.yaml"
    extra.write_text(f"{section}:\n  {key}: {value}\n")
    with pytest.raises(ValueError, match=f"{section}.{key}"):
        Settings.load(extra)


def test_unknown_keys_are_refused(tmp_path):
    extra = tmp_path / "bad.yaml"
    extra.write_text("timing:\n  max_secs: 1\n")
    with pytest.raises(ValueError, match="max_secs"):
        Settings.load(extra)
