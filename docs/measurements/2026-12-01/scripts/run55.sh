#!/usr/bin/env bash
# Run 55 (2026-12-01): timing.rehearse (the previous sample's calls again before each
# timed sample) against it off, nvfp4 triton_hopper case 3 timed from inside the
# submission beside the public evaluator, 3 rounds; then the GPU tests.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 330 python $S/diag_probe_case3.py --reference-kernels .refk --rounds 3 --out "$OUT" \
  --harness-config $S/rehearse_off.yaml > "$OUT/probe.log" 2>&1
grep -v "^PROBE" "$OUT/probe.log" | tail -20
timeout 170 python -m pytest -q -x tests/test_gpu.py tests/test_adversarial.py tests/test_worker.py \
  tests/test_head_start.py -k "gpu or cuda or side or GPU or worker or head" > "$OUT/gpu_tests.log" 2>&1
tail -5 "$OUT/gpu_tests.log"
