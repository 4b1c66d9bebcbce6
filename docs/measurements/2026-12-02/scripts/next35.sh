#!/usr/bin/env bash
# After run 99 (next33.sh: the attack flagged, 20 honest cases not) integrity.sleep_measured
# is the default. The GPU tests, the corpus's GPU attacks and the masking's GPU tests under
# the new defaults (one H200, alone; about 5 min; no carry): all pass, and
# test_work_in_the_slack_of_a_long_sleep now runs without a config (the default measures).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/next35.db
{ date -u; nproc; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 500 python -m pytest -q -rs tests/test_gpu.py tests/test_adversarial.py tests/test_masking.py \
  -k "gpu or mailbox or patched_event or side_stream or slack_of_a_long_sleep" > "$OUT/tests.log" 2>&1
echo "tests rc $?" >> "$OUT/tests.log"; tail -n 30 "$OUT/tests.log"
