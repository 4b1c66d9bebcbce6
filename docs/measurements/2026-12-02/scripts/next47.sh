#!/usr/bin/env bash
# Run 115's one failure again, alone (one H200; about 1.5 min, one round: the budget left; no carry): in
# test_work_in_the_slack_of_a_long_sleep_is_seen_when_the_judge_times_it the honest
# add_waiting.py (behind a 20 ms window, waiting for the GPU in each call) was flagged by
# the probes' two clocks, 119.5 µs a call against 100 allowed, on its retry too. vectoradd
# has no CPU-side inputs, so the kept buffer is not on its path. Written before it runs:
# it passes -> a false flag near the allowance, left as a known gap; it fails again ->
# a regression to find before the kept buffer is called done.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/next47.db
date -u > "$OUT/machine.txt"
for i in 1; do
  timeout 120 python -m pytest -q -rs tests/test_adversarial.py -k slack_of_a_long_sleep \
    > "$OUT/tests_$i.log" 2>&1
  echo "round $i rc $?: $(tail -n 1 "$OUT/tests_$i.log")" | tee -a "$OUT/rounds.txt"
  grep -o "flag (benchmark[^│]*" "$OUT/tests_$i.log" | head -3
done
