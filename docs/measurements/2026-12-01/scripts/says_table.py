"""Per case of result documents (runner.py --json): the calibration's no-op gap against the
probes' gap, and the worker's own account of each (medians, µs), to show where the probes'
time outside the timed region differs from the no-ops' (run 89, timing.rehearse_late)."""
import json
import sys

KEYS = ("pre_ns", "lead_ns", "host_ns", "sync_ns", "copy_ns", "busy_ns", "transport_ns")
for path in sys.argv[1:]:
    doc = json.load(open(path))
    print(f"== {path}")
    for phase in doc["phases"]:
        if phase["name"] != "benchmark":
            continue
        for case in phase["cases"]:
            integ = case.get("integrity", {})
            cal, check = integ.get("calibration", {}), integ.get("clocks", {})
            print(f" case {case['index']} score {case.get('score_ns', 0) / 1e3:.1f} µs "
                  f"flags {len(case.get('flags', []))}: calibration gap "
                  f"{cal.get('median_ns', 0) / 1e3:.1f} (p90 {cal.get('p90_ns', 0) / 1e3:.1f}); "
                  f"probe gap {check.get('gap_median_ns', 0) / 1e3:.1f} "
                  f"(low {check.get('gap_low_ns', 0) / 1e3:.1f})")
            for who, says in (("no-op", cal.get("worker_says", {})),
                              ("probe", integ.get("worker_says", {}))):
                print(f"   {who}: " + " ".join(f"{k[:-3]} {says[k] / 1e3:.1f}"
                                             for k in KEYS if k in says))
