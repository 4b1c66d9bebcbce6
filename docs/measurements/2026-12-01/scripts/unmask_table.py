"""Per case of result documents (runner.py --json): the unmasking check's figures
(`integrity.unmasking`: the samples' median round trip against what the judge expects,
the allowance, flagged or not), the scored samples' clock check (`integrity.scored_clocks`)
and every flag, to see that no honest case is flagged by them (next31.sh)."""
import json
import sys

for path in sys.argv[1:]:
    doc = json.load(open(path))
    print(f"== {path}")
    for phase in doc["phases"]:
        for case in phase["cases"]:
            u = case.get("integrity", {}).get("unmasking")
            figures = (f"unmask {u['median_ns'] / 1e3:.1f} µs vs expected "
                       f"{u['expected_ns'] / 1e3:.1f} (allowed +{u['allowed_excess_ns'] / 1e3:.1f}) "
                       f"{'FLAGGED' if u['flagged'] else 'ok'}") if u else "no unmasking record"
            sc = case.get("integrity", {}).get("scored_clocks")
            if sc:
                figures += (f"; scored gap {sc['gap_median_ns'] / 1e3:.1f} vs "
                            f"{sc['expected_gap_ns'] / 1e3:.1f} (allowed "
                            f"+{sc['allowed_excess_ns'] / 1e3:.1f}) "
                            f"{'FLAGGED' if sc['flagged'] else 'ok'}")
            print(f" {phase['name']} case {case['index']} {case['status']} "
                  f"score {(case.get('score_ns') or 0) / 1e3:.1f} µs: {figures}; "
                  f"flags {len(case.get('flags', []))}")
            for flag in case.get("flags", []):
                print(f"   flag: {flag[:160]}")
