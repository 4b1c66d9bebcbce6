#!/usr/bin/env bash
# Run 33 (one H200, alone; carry .refk and .shared, a copy of
# ../shared made with `cp -r ../shared .shared`): what issue 14 still needs.
#  1. nvfp4 triton_hopper case 3 reads 13-19% above the public evaluator on two machines
#     (runs 28-32). diag_case3.py times it the public way in one process, then with the
#     inputs rewritten between repeats, with a second idle CUDA context, and with both.
#     If one variant reads about 15-20% higher, that difference is the cause.
#  2. The same pair under contest_parity, 3 runs, for the record beside it.
#  3. The two GPU tests that read shared/ (skipped in run 30 without it).
# Files straight under $OUT (at most 8 come back).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
D=docs/measurements/2026-11-30/scripts
{ date -u; git log -1 --format=%H 2>/dev/null; nvidia-smi --query-gpu=name,clocks.sm --format=csv; } > "$OUT/machine.txt" 2>&1
timeout 240 python $D/diag_case3.py --rounds 6 --repeats 60 > "$OUT/diag_case3.log" 2>&1
timeout 150 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity.log" 2>&1
timeout 150 python -m pytest -q -rs tests/test_gpu.py -k seed > "$OUT/gpu_shared.log" 2>&1
cat "$OUT/diag_case3.log"; grep -A2 "== summary" "$OUT/parity.log"; tail -n 3 "$OUT/gpu_shared.log"
