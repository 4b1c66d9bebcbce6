#!/usr/bin/env bash
# The GPU tests after `timing.warm: torch` (one H200; carry .shared, a copy of ../shared
# made with `cp -r ../shared .shared`, for the two tests that read it). Run 38 ran the
# same selection under a 150 s limit, which cut it after 23 passed.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
timeout 540 python -m pytest -q -rs tests/test_gpu.py tests/test_adversarial.py tests/test_worker.py \
  tests/test_head_start.py -k "gpu or cuda or side or GPU or worker or head" > "$OUT/gpu_tests.log" 2>&1
tail -n 6 "$OUT/gpu_tests.log"
