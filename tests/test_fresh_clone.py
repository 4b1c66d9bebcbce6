"""A fresh clone with nothing beside it: tests that need the project's shared/ folder skip."""

from pathlib import Path

from conftest import find_shared


def test_shared_beside_the_clone_is_found(tmp_path: Path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "repo").mkdir()
    assert find_shared(tmp_path / "repo", {}) == tmp_path / "shared"


def test_the_gpu_machines_copy_is_found(tmp_path: Path):
    (tmp_path / ".shared").mkdir()
    assert find_shared(tmp_path, {}) == tmp_path / ".shared"


def test_no_shared_folder_gives_none(tmp_path: Path):
    (tmp_path / "repo").mkdir()
    assert find_shared(tmp_path / "repo", {}) is None


def test_the_environment_can_hide_or_name_it(tmp_path: Path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "repo").mkdir()
    assert find_shared(tmp_path / "repo", {"HARNESS_TEST_SHARED": "none"}) is None
    assert find_shared(tmp_path / "repo", {"HARNESS_TEST_SHARED": ""}) is None
    assert find_shared(tmp_path / "repo", {"HARNESS_TEST_SHARED": str(tmp_path / "shared")}) \
        == tmp_path / "shared"
    assert find_shared(tmp_path / "repo", {"HARNESS_TEST_SHARED": str(tmp_path / "nope")}) is None
