#!/usr/bin/env bash
# After runs 94-98 (one H200, alone; about 5 min; no carry). 1) The GPU attacks: patch_event_timer's
# test now asserts an honest score and no rank (run 94: the patch never reaches the timing
# since f17e3b4), beside the side-stream and mailbox-hook attacks and the new sleep_slack.py
# (3 ms of work on scored samples only, hidden in the slack of a 20 ms sleep; flagged with
# integrity.sleep_measured, and an honest run behind the same window not). 2) The examples
# whose sleeps are long, under sleep_measured.yaml: no honest case flagged, and the judge's
# own timing of the sleep (scored_clocks.sleep.ns_per_cycle) against the maximum clock's
# figure (0.505 ns a cycle at 1980 MHz), as the samples start and as they end: how much
# longer the sleep really runs, how much it drifts, and how far below the 2% slack honest
# code stays. next34.sh does the parity part.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/next33.db
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 200 python -m pytest -q tests/test_adversarial.py \
  -k "patched_event or side_stream or mailbox or slack_of_a_long_sleep" > "$OUT/attacks.log" 2>&1
echo "attacks rc $?" >> "$OUT/attacks.log"; tail -n 3 "$OUT/attacks.log"
for f in submissions/mxfp4_mm/torch_dequant.py submissions/mxfp4_mm/triton_dot_scaled.py \
         submissions/nvfp4_group_gemm/torch_dequant.py submissions/nvfp4_group_gemm/triton_hopper.py; do
  task=$(basename "$(dirname "$f")")
  timeout 100 python runner.py submit "$f" --task "$task" --mode benchmark --config $S/sleep_measured.yaml \
    --json "$OUT/sm_${task}_$(basename "$f" .py).json" > /dev/null 2>> "$OUT/sleep.log"
done
python - "$OUT"/sm_*.json >> "$OUT/sleep.log" 2>&1 <<'PY'
import json, sys
for path in sys.argv[1:]:
    doc = json.load(open(path))
    for phase in doc["phases"]:
        for c in phase["cases"]:
            sc = (c.get("integrity") or {}).get("scored_clocks")
            if not sc:
                print(path, phase["name"], c["index"], "no scored_clocks"); continue
            sl = sc["sleep"]
            m = sl["at_max_clock_ns_per_cycle"]
            timed = (f"timed {sl['timed_before_ns_per_cycle'] / m:.3f}x/{sl['timed_after_ns_per_cycle'] / m:.3f}x max"
                     if "timed_before_ns_per_cycle" in sl else "not timed")
            print(f"{path.split('/')[-1]} {phase['name']} {c['index']}: sleep {timed}, "
                  f"used {sl['ns_per_cycle'] / m:.3f}x, slack {sl['slack']}, "
                  f"measured {sl['measured']}; gap {sc['gap_median_ns'] / 1e3:.1f} vs "
                  f"{sc['expected_gap_ns'] / 1e3:.1f} (allowed +{sc['allowed_excess_ns'] / 1e3:.1f}) "
                  f"{'FLAGGED' if sc['flagged'] else 'ok'}; flags {len(c['flags'])}")
PY
tar -czf "$OUT/sm_json.tgz" -C "$OUT" $(cd "$OUT" && ls sm_*.json) && rm -f "$OUT"/sm_*.json
tail -n 30 "$OUT/sleep.log"
