#!/usr/bin/env bash
# After run 102 (mxfp4 torch_dequant, late order, pooled four runs 1.007: six of six pairs
# meet parity with it) timing.rehearse_late is the GPU default. The GPU tests and the
# corpus's GPU attacks under the new defaults (one H200, alone; about 5.5 min, the rest of
# this session's device time; no carry): all pass. -v so that a cut-short run still says
# which passed.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/next37.db
{ date -u; nproc; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 300 python -m pytest -v -rs tests/test_gpu.py tests/test_adversarial.py \
  -k "gpu or mailbox or patched_event or side_stream or slack_of_a_long_sleep" > "$OUT/tests.log" 2>&1
echo "tests rc $?" >> "$OUT/tests.log"; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|rc " "$OUT/tests.log" | tail -n 40
