"""Nsight Compute's report read back per kernel (harness/judging/profile/ncu_report.py),
on CSV in the form `ncu --import REPORT --csv --page raw|details` prints: a header, a units
row on the raw page, a row per launch (raw) or per metric and rule result (details)."""

from harness.judging.profile.ncu_report import (
    FINDINGS,
    findings_from,
    import_commands,
    kernels_from,
)

ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "std::array<char *, 3>>(int, T2, T3)")
COPY = "triton_poi_fused_copy_0"
HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC",')
RAW = (
    "==PROF== Connected to process 4242\n"  # ncu's own lines before the CSV
    + HEAD + '"gpu__time_duration.sum","launch__registers_per_thread",'
    '"sm__throughput.avg.pct_of_peak_sustained_elapsed",'
    '"dram__throughput.avg.pct_of_peak_sustained_elapsed",'
    '"sm__warps_active.avg.pct_of_peak_sustained_active"\n'
    '"","","","","","","","","","","","usecond","register/thread","%","%","%"\n'
    f'"0","4242","python3","host","{ADD}","1","7","(128, 1, 1)","(8,192, 1, 1)","0","9.0",'
    '"5.25","16","41.5","88.0","79.0"\n'
    f'"1","4242","python3","host","{COPY}","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0",'
    '"1,250.50","32","n/a","10.0","50.0"\n'
    f'"2","4242","python3","host","{ADD}","1","7","(128, 1, 1)","(8,192, 1, 1)","0","9.0",'
    '"5.75","18","42.5","90.0","81.0"\n'
)
DETAILS_HEAD = (HEAD + '"Section Name","Metric Name","Metric Unit","Metric Value","Rule Name",'
                '"Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"\n')


def _detail(kid: int, name: str, rule: str = "", kind: str = "", text: str = "",
            speedup: str = "", metric: str = "") -> str:
    return (f'"{kid}","4242","python3","host","{name}","1","7","(128, 1, 1)","(64, 1, 1)","0",'
            f'"9.0","Section","{metric}","","{"1" if metric else ""}","{rule}","{kind}",'
            f'"{text}","{"global" if speedup else ""}","{speedup}"\n')


DETAILS = (DETAILS_HEAD
           + _detail(0, ADD, metric="Duration")
           + _detail(0, ADD, "SOLBottleneck", "OPT", "Memory is more heavily utilized than "
                     "Compute:  look at the memory workload analysis.", "12.5")
           + _detail(0, ADD, "LaunchConfiguration", "INF", "Information only.")
           + _detail(0, ADD, "AchievedOccupancy", "OPT", "Occupancy is below its limit.", "20")
           + _detail(2, ADD, "SOLBottleneck", "OPT", "Memory again.", "30")
           + _detail(0, ADD, "HighPipeUtilization", "WRN", "No speedup is estimated.")
           + _detail(0, ADD, "Tail", "OPT", "A tail effect.", "1")
           + _detail(1, COPY, "SmallGrid", "OPT", "The grid is too small.", "n/a"))


def test_each_kernel_gets_the_means_of_its_launches_in_nanoseconds():
    add, copy = kernels_from(RAW, DETAILS)
    assert (add["name"], add["launches"], copy["name"], copy["launches"]) == (ADD, 2, COPY, 1)
    assert add["duration_ns"] == 5_500.0  # usecond, read as ns
    assert add["sm_throughput_pct"] == 42.0 and add["dram_throughput_pct"] == 89.0
    assert add["achieved_occupancy_pct"] == 80.0 and add["registers_per_thread"] == 18
    assert copy["duration_ns"] == 1_250_500.0  # "1,250.50"
    assert copy["sm_throughput_pct"] is None  # n/a: not a number, not an error


def test_the_top_findings_come_first_one_per_rule():
    add, copy = kernels_from(RAW, DETAILS)
    assert [f["rule"] for f in add["findings"]] == ["SOLBottleneck", "AchievedOccupancy", "Tail"]
    assert len(add["findings"]) == FINDINGS
    top = add["findings"][0]
    assert top == {"rule": "SOLBottleneck", "type": "OPT", "description": "Memory again.",
                   "speedup_pct": 30.0}  # the launch with the largest speedup
    assert copy["findings"] == [{"rule": "SmallGrid", "type": "OPT",
                                 "description": "The grid is too small.", "speedup_pct": None}]


def test_a_warning_without_speedup_ranks_after_those_with_one():
    found = findings_from(DETAILS_HEAD + _detail(0, ADD, "W", "WRN", "w")
                          + _detail(0, ADD, "O", "OPT", "o", "0.5"))[ADD]
    assert [f["rule"] for f in found] == ["O", "W"]


def test_another_version_s_columns_and_missing_metrics_give_none():
    raw = ('"ID","Function Name","gpu__time_duration.sum","gpu__dram_throughput.avg.pct_of_'
           'peak_sustained_elapsed"\n"","","nsecond","%"\n"0","k","1,000","55.5"\n')
    [kernel] = kernels_from(raw)
    assert kernel["duration_ns"] == 1_000.0 and kernel["dram_throughput_pct"] == 55.5
    assert kernel["sm_throughput_pct"] is None and kernel["registers_per_thread"] is None
    assert kernel["findings"] == []
    weird = '"ID","Kernel Name","gpu__time_duration.sum"\n"","","furlong"\n"0","k","3"\n'
    assert kernels_from(weird)[0]["duration_ns"] is None  # not a unit of time


def test_what_is_not_a_report_gives_no_kernels():
    for text in ("", "==ERROR== the report could not be opened\n", '"a","b"\n"1"\n',
                 '"ID","Kernel Name"\n"0"\n'):
        assert kernels_from(text, text) == [] and findings_from(text) == {}


def test_the_import_commands():
    asked, whole, details = import_commands("/opt/ncu", "/r/x.ncu-rep")
    assert asked[:3] == ["/opt/ncu", "--import", "/r/x.ncu-rep"] and "--csv" in asked
    metrics = asked[asked.index("--metrics") + 1].split(",")
    assert "gpu__time_duration.sum" in metrics and "launch__registers_per_thread" in metrics
    assert "--metrics" not in whole and details[details.index("--page") + 1] == "details"


def test_the_h200s_own_csv():
    """What `ncu --import` printed for the vectoradd Triton example's case 0 on an H200
    (ncu of CUDA 13.0): the raw page with its units row, the details page with its rules."""
    from pathlib import Path

    data = Path(__file__).parent / "data" / "ncu"
    (kernel,) = kernels_from((data / "h200_add_raw.csv").read_text(),
                             (data / "h200_add_details.csv").read_text())
    assert kernel["name"] == "_add" and kernel["launches"] == 1
    assert kernel["duration_ns"] == 4096.0 and kernel["registers_per_thread"] == 26
    assert (kernel["sm_throughput_pct"], kernel["dram_throughput_pct"],
            kernel["achieved_occupancy_pct"]) == (4.09, 21.48, 19.73)
    rules = [f["rule"] for f in kernel["findings"]]
    assert rules[0] == "AchievedOccupancy" and kernel["findings"][0]["speedup_pct"] == 80.27
    assert "SOLBottleneck" in rules
