"""Settings: defaults from configs/, overrides, the CPU section, and refused values."""

import pytest

from harness.settings import Settings


def test_defaults_follow_the_evaluation_protocol():
    timing = Settings.load().timing
    assert timing.host_launch == "hidden"


def test_cpu_section_replaces_gpu_values():
    settings = Settings.load()
    assert settings.for_device("cpu").timing.min_calls < settings.timing.min_calls
    assert settings.for_device("cuda").timing.min_calls == settings.timing.min_calls


@pytest.mark.parametrize("key,value", [("host_launch", "some")])
def test_unknown_choices_are_refused(tmp_path, key, value):
    extra = tmp_path / "bad.yaml"
    extra.write_text(f"timing:\n  {key}: {value}\n")
    with pytest.raises(ValueError, match=key):
        Settings.load(extra)


@pytest.mark.parametrize("section,key,value", [
    ("worker", "sandbox", "chroot"), ("worker", "compile_cache", "shared"),
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


@pytest.mark.parametrize("text, key", [
    ("timing:\n  ring_slots: 4\n", "timing.ring_slots"),
    ("integrity:\n  gap_abs_us: 50\n", "integrity.gap_abs_us"),
    ("worker:\n  sandbox_seccomp: false\n", "worker.sandbox_seccomp"),
    ("cpu:\n  timing:\n    min_samples: 2\n", "timing.min_samples"),  # checked on any device
    # mechanisms the harness no longer has, or runs without a switch
    ("timing:\n  rehearse: false\n", "timing.rehearse"),
    ("timing:\n  rehearse_late: false\n", "timing.rehearse_late"),
    ("timing:\n  mask_cpu_inputs: false\n", "timing.mask_cpu_inputs"),
    ("integrity:\n  unmask_allowance_us: 500\n", "integrity.unmask_allowance_us"),
    ("integrity:\n  unmask_rel: 1.0\n", "integrity.unmask_rel"),
    ("worker:\n  hold_cpu: false\n", "worker.hold_cpu"),
    ("worker:\n  pin_cpus: false\n", "worker.pin_cpus"),
    ("worker:\n  gc_freeze: false\n", "worker.gc_freeze"),
    ("cpu:\n  worker:\n    hold_cpu: false\n", "worker.hold_cpu"),
    ("timing:\n  window_fill_bytes: 268435456\n", "timing.window_fill_bytes"),
    ("timing:\n  sync: device\n", "timing.sync"),
    ("timing:\n  warm: torch\n", "timing.warm"),
    ("timing:\n  judge_spin_seconds: 0\n", "timing.judge_spin_seconds"),
    ("timing:\n  mailbox: true\n", "timing.mailbox"),
    ("cpu:\n  timing:\n    mailbox: true\n", "timing.mailbox"),
    ("integrity:\n  noise_retries: 0\n", "integrity.noise_retries"),
    ("integrity:\n  sleep_measured: false\n", "integrity.sleep_measured"),
    ("integrity:\n  sleep_slack: 0.25\n", "integrity.sleep_slack"),
    ("integrity:\n  sleep_slack_measured: 0.02\n", "integrity.sleep_slack_measured"),
    ("integrity:\n  sleep_drift_max: 0.05\n", "integrity.sleep_drift_max"),
])
def test_a_key_that_is_an_engine_constant_is_refused_by_its_full_name(tmp_path, text, key):
    """The timing engine's constants live in its code: a file that still sets one is told
    which key is not a setting, rather than having it ignored."""
    extra = tmp_path / "old.yaml"
    extra.write_text(text)
    with pytest.raises(ValueError, match=f"not a setting: {key}"):
        Settings.load(extra)


@pytest.mark.parametrize("section,key", [
    ("integrity", "floor_margin"), ("worker", "max_restarts"), ("web", "output_tail_chars"),
])
def test_a_retired_key_is_refused_with_where_it_went(tmp_path, section, key):
    extra = tmp_path / "old.yaml"
    extra.write_text(f"{section}:\n  {key}: 2\n")
    with pytest.raises(ValueError, match=f"no longer a setting: {section}.{key} \\("):
        Settings.load(extra)


def test_the_defaults_hold_at_most_forty_keys():
    """Organisers read every key of configs/defaults.yaml; the engine's constants stay in code."""
    def leaves(mapping):
        return sum(leaves(v) if isinstance(v, dict) and v else 1 for v in mapping.values())

    assert leaves(Settings.load().raw) <= 40


@pytest.mark.parametrize("text,message", [
    ("timing:\n  min_calls: ten\n", "timing.min_calls must be a whole number, not 'ten'"),
    ("timing:\n  max_seconds: soon\n", "timing.max_seconds must be a number, not 'soon'"),
    ("timing:\n  max_calls: 2.5\n", "timing.max_calls must be a whole number, not 2.5"),
    ("worker:\n  head_start: maybe\n", "worker.head_start must be true or false, not 'maybe'"),
    ("worker:\n  env_pass: CUDA_HOME\n", "worker.env_pass must be a list of text"),
    ("integrity:\n  refuse_ranking_on: hard\n",
     "integrity.refuse_ranking_on must be a list of text, not 'hard'"),
    ("web:\n  port: eighty\n", "web.port must be a whole number, not 'eighty'"),
    ("tasks:\n  default_timeout: [1]\n", "tasks.default_timeout must be a number"),
    ("store:\n  path: 3\n", "store.path must be text, not 3"),
    ("store:\n  paht: x.db\n", "not a setting: store.paht"),
    ("server:\n  rate_limit: lots\n", "server.rate_limit must be a whole number, not 'lots'"),
    ("server:\n  rate_limt: 3\n", "not a setting: server.rate_limt"),
    ("cpu:\n  timing:\n    min_calls: three\n", "timing.min_calls must be a whole number"),
    ("timng:\n  min_calls: 3\n", "not a section of the settings: timng"),
])
def test_a_wrong_type_or_key_names_the_file_the_key_and_what_was_expected(tmp_path, text,
                                                                           message):
    extra = tmp_path / "organiser.yaml"
    extra.write_text(text)
    with pytest.raises(ValueError) as raised:
        Settings.load(extra)
    assert str(raised.value).startswith(f"{extra}: "), str(raised.value)
    assert message in str(raised.value), str(raised.value)


def test_null_where_a_setting_may_be_null_and_whole_numbers_for_numbers(tmp_path):
    extra = tmp_path / "organiser.yaml"
    extra.write_text("worker:\n  compile_cache_dir: null\ntiming:\n  max_seconds: 2\n")
    assert Settings.load(extra).timing.max_seconds == 2


@pytest.mark.slow
def test_runner_exits_2_on_a_config_of_the_wrong_type(tmp_path):
    from conftest import run_cli

    extra = tmp_path / "organiser.yaml"
    extra.write_text("timing:\n  min_calls: ten\n")
    r = run_cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "test", "--device",
                "cpu", "--config", str(extra))
    assert r.rc == 2 and "timing.min_calls must be a whole number, not 'ten'" in r.out, r.out
