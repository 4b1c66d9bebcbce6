import textwrap

import pytest

from harness.loading.task_folder import TaskError, import_reference, list_task_names, load_task

REFERENCE = textwrap.dedent('''
    import torch
    from task import input_t
    from shared_helpers import OFFSET

    def generate_input(size, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(size, generator=g)

    def ref_kernel(data):
        return data + OFFSET

    def check_implementation(data, output):
        return "" if torch.equal(output, ref_kernel(data)) else "mismatch"
''')


def make_task(folder, yml, files):
    folder.mkdir(parents=True)
    (folder / "task.yml").write_text(textwrap.dedent(yml))
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def test_repository_tasks_load():
    names = list_task_names()
    assert {"vectoradd", "nvfp4_group_gemm", "mxfp4_mm"} <= set(names)
    for name in names:
        task = load_task(name)
        assert task.tests and task.content_hash


def test_files_outside_the_task_folder(tmp_path):
    """Public problem sets share helpers one level up; `files:` may point there."""
    (tmp_path / "shared_helpers.py").write_text("OFFSET = 3\n")
    folder = make_task(tmp_path / "problems" / "addone", """
        files:
          - {name: submission.py, source: "@SUBMISSION@"}
          - {name: task.py, source: task.py}
          - {name: reference.py, source: reference.py}
          - {name: shared_helpers.py, source: ../../shared_helpers.py}
        lang: py
        tests:
          - {size: 4, seed: 1}
        benchmarks:
          - {size: 8, seed: 2}
        ranking_by: mean
    """, {"task.py": "input_t = object\noutput_t = object\n", "reference.py": REFERENCE})
    task = load_task(str(folder))
    assert task.name == "addone" and task.ranking_by == "mean"
    staged = task.stage(tmp_path / "judge")
    assert (staged / "shared_helpers.py").read_text() == "OFFSET = 3\n"
    ref = import_reference(task, staged)
    data = ref.generate({"size": 4, "seed": 1}, "cpu")
    assert ref.check(data, data + 3) == (True, "")  # the older string form, read as a pair
    ok, message = ref.check(data, data)
    assert not ok and message == "mismatch"
    worker = task.stage(tmp_path / "worker", folder / "task.py", for_worker=True)
    assert not (worker / "reference.py").exists()  # submissions cannot import it
    assert (worker / "submission.py").exists()
    # The text the run read (and hashed, and records) is the text staged, not a second read.
    again = task.stage(tmp_path / "again", folder / "task.py", for_worker=True,
                       text="def custom_kernel(data):\n    return data\n")
    assert (again / "submission.py").read_text() == "def custom_kernel(data):\n    return data\n"


def test_content_hash_changes_with_a_helper(tmp_path):
    (tmp_path / "shared_helpers.py").write_text("OFFSET = 3\n")
    folder = make_task(tmp_path / "t", """
        files:
          - {name: submission.py, source: "@SUBMISSION@"}
          - {name: task.py, source: task.py}
          - {name: reference.py, source: reference.py}
          - {name: shared_helpers.py, source: ../shared_helpers.py}
        tests: [{size: 1, seed: 1}]
    """, {"task.py": "", "reference.py": REFERENCE})
    before = load_task(str(folder)).content_hash
    (tmp_path / "shared_helpers.py").write_text("OFFSET = 4\n")
    assert load_task(str(folder)).content_hash != before


@pytest.mark.parametrize("yml,files,needle", [
    ("tests: [{size: 1}]\nfiles:\n  - {name: task.py, source: missing.py}\n", {}, "does not exist"),
    ("tests: [{size: 1}]\nlang: cu\n", {}, "not supported"),
    ("tests: []\n", {"task.py": "", "reference.py": ""}, "no tests"),
    ("tests: [{size: 1}]\nranking_by: median\n", {"task.py": "", "reference.py": ""}, "ranking_by"),
    ("tests: [{size: 1}\n", {}, "not valid YAML"),
    ("tests: [{size: 1}]\n", {"task.py": ""}, "no reference.py"),
    ("tests: [{size: 1}]\ntiming: {hold_cpu: true}\n", {"task.py": "", "reference.py": ""},
     "unknown timing key 'hold_cpu'"),
    ("tests: [{size: 1}]\ntiming: {calls_per_sample: 0}\n", {"task.py": "", "reference.py": ""},
     "timing.calls_per_sample must be a positive whole"),
    ("tests: [{size: 1}]\ntiming: {hold: true}\n", {"task.py": "", "reference.py": ""},
     "unknown timing key 'hold'"),
    ("tests: [{size: 1}]\ntiming: {window_fill_bytes: 268435456}\n",
     {"task.py": "", "reference.py": ""}, "unknown timing key 'window_fill_bytes'"),
    ("tests: [{size: 1}]\nmulti_gpu: 'yes'\n", {"task.py": "", "reference.py": ""},
     "multi_gpu must be true or false"),
    ("tests: [{size: 1, world_size: 2}]\nbenchmarks: [{size: 2}]\nmulti_gpu: true\n",
     {"task.py": "", "reference.py": ""}, "needs world_size.*'size': 2.*None"),
    ("tests: [{size: 1, world_size: 0}]\nmulti_gpu: true\n", {"task.py": "", "reference.py": ""},
     "needs world_size"),
    ("tests: [{size: 1, world_size: true}]\nmulti_gpu: true\n",
     {"task.py": "", "reference.py": ""}, "needs world_size"),
])
def test_malformed_tasks_are_clear(tmp_path, yml, files, needle):
    folder = make_task(tmp_path / "bad", yml, files)
    with pytest.raises(TaskError, match=needle):
        load_task(str(folder))


def test_unknown_task_lists_known_ones():
    with pytest.raises(TaskError, match="known tasks: .*vectoradd"):
        load_task("no_such_task")


def test_reference_without_check_is_rejected(tmp_path):
    folder = make_task(tmp_path / "t", "tests: [{size: 1}]\n", {
        "task.py": "", "reference.py": "def generate_input(**k): pass\ndef ref_kernel(d): pass\n"})
    task = load_task(str(folder))
    with pytest.raises(TaskError, match="check_implementation"):
        import_reference(task, task.stage(tmp_path / "j"))


def test_warm_runs_the_tasks_code_once_and_swallows_its_failures():
    """Reference.warm (run by the judge while a GPU worker starts): generate, reference
    and check once on the case; a failure is returned, never raised (the case reports it)."""
    from types import SimpleNamespace

    from harness.loading.task_folder import Reference

    calls = []
    module = SimpleNamespace(
        generate_input=lambda size, seed, device: calls.append(("gen", size, seed, device)) or [size],
        ref_kernel=lambda data: calls.append(("ref", data)) or data,
        check_implementation=lambda data, out: calls.append(("check", data, out)) or (True, ""),
    )
    ref = Reference(module, generate_accepts_device=True)
    assert ref.warm({"size": 4, "seed": 7}, "cuda") is None
    assert calls == [("gen", 4, 7, "cuda"), ("ref", [4]), ("check", [4], [4])]

    def broken(data):
        raise RuntimeError("reference failed")

    module.ref_kernel = broken
    assert "reference failed" in ref.warm({"size": 4, "seed": 7}, "cuda")


def test_a_multi_gpu_task_says_the_ranks_of_its_cases(tmp_path):
    yml = ("tests: [{size: 1, world_size: 4}, {size: 2, world_size: 2}]\n"
           "benchmarks: [{size: 3, world_size: 4}]\nmulti_gpu: true\n")
    task = load_task(str(make_task(tmp_path / "ranks", yml, {"task.py": "", "reference.py": ""})))
    assert task.multi_gpu and task.world_sizes == [2, 4]
    one = load_task("vectoradd")
    assert not one.multi_gpu and one.world_sizes == [1]


def test_the_task_list_says_how_many_gpus_a_multi_gpu_run_takes(tmp_path):
    from harness.frontends.commands import _gpus

    files = {"task.py": "", "reference.py": ""}
    ranks = make_task(tmp_path / "ranks", "tests: [{size: 1, world_size: 8}]\nmulti_gpu: true\n"
                      "gpus: [MI300X]\n", files)
    spread = make_task(tmp_path / "spread", "tests: [{size: 1, world_size: 2}, "
                       "{size: 1, world_size: 4}]\nmulti_gpu: true\n", files)
    assert _gpus(load_task(str(ranks))) == "MI300X (8 a run)"
    assert _gpus(load_task(str(spread))) == "any (2-4 a run)"
    assert _gpus(load_task("vectoradd")) == "H200, H100, B200, A100, L4, T4"
