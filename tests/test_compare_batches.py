"""benchmarks/compare_batches.py on hand-made batch documents (the shape `batch --json` writes)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import compare_batches  # noqa: E402


def result(file, where, started, wall, cases):
    return {"file": file, "where": [where], "started": started, "wall_seconds": wall,
            "status": "passed", "cases": cases}


def write(tmp_path, name, wall, results):
    path = tmp_path / name
    path.write_text(json.dumps({"wall_seconds": wall, "results": results}))
    return path


ONE = [result("a.py", "GPU 0", 0, 10, [[None], [100.0, 200.0]]),
       result("b.py", "GPU 0", 10, 10, [[None], [50.0]])]


def test_two_devices_at_once_agreeing_pass(tmp_path, capsys):
    many = [result("a.py", "GPU 0", 0, 10, [[None], [102.0, 195.0]]),
            result("b.py", "GPU 1", 1, 10, [[None], [51.0]])]
    rc = compare_batches.main([str(write(tmp_path, "many.json", 11, many)),
                               str(write(tmp_path, "one.json", 20, ONE)), "--noise", "0.05"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "of them on different devices: 1" in out and "ratio 0.55" in out


def test_two_evaluations_on_one_device_at_once_fail(tmp_path, capsys):
    many = [result("a.py", "GPU 0", 0, 10, [[None], [100.0, 200.0]]),
            result("b.py", "GPU 0", 5, 10, [[None], [50.0]])]
    rc = compare_batches.main([str(write(tmp_path, "many.json", 15, many)),
                               str(write(tmp_path, "one.json", 20, ONE))])
    assert rc == 1 and "SHARED ['GPU 0']" in capsys.readouterr().out


def test_times_disturbed_beyond_noise_fail(tmp_path, capsys):
    many = [result("a.py", "GPU 0", 0, 10, [[None], [150.0, 200.0]]),
            result("b.py", "GPU 1", 0, 10, [[None], [50.0]])]
    rc = compare_batches.main([str(write(tmp_path, "many.json", 10, many)),
                               str(write(tmp_path, "one.json", 20, ONE)), "--noise", "0.1"])
    assert rc == 1 and "OUTSIDE NOISE" in capsys.readouterr().out


def test_one_after_another_is_not_concurrency(tmp_path, capsys):
    many = [result("a.py", "GPU 0", 0, 10, [[None], [100.0, 200.0]]),
            result("b.py", "GPU 1", 10, 10, [[None], [50.0]])]
    rc = compare_batches.main([str(write(tmp_path, "many.json", 20, many)),
                               str(write(tmp_path, "one.json", 20, ONE))])
    assert rc == 1 and "no two evaluations ran at the same time" in capsys.readouterr().out


def test_unreadable_input_is_a_usage_error(tmp_path, capsys):
    import pytest

    with pytest.raises(SystemExit) as exit_info:
        compare_batches.main([str(tmp_path / "missing.json"), str(write(tmp_path, "one.json", 20, ONE))])
    assert exit_info.value.code == 2 and "cannot read" in capsys.readouterr().err
