#!/usr/bin/env bash
# For the next session's first GPU call (one H200, alone; carry .refk and .shared, a copy
# of ../shared made with `cp -r ../shared .shared`). What came after run 37 and is not yet
# measured on the GPU:
#  - a hidden window of up to 1 ms slept whole (e97e988; vectoradd's 100 µs; the sleep was
#    sized from recent launches before): vectoradd Triton's case 0 should lose its slow
#    samples (22-61 µs against a median of 6.3 µs in run 36);
#  - per-case calibration capped at 0.25 s past 10 no-ops (2ee99f1): nvfp4's case 0
#    calibration took 0.99-1.06 s; its benchmark wall should fall by about 1.2 s;
#  - a two-clock flag on fewer than 5 samples confirmed on more probes (61cef37; run 37
#    ran it once, without a flag).
# Then the GPU tests. Files straight under $OUT (at most 8 come back).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
timeout 220 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 5 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
timeout 150 python -m pytest -q -rs tests/test_gpu.py tests/test_adversarial.py tests/test_worker.py \
  tests/test_head_start.py -k "gpu or cuda or side or GPU or worker or head" > "$OUT/gpu_tests.log" 2>&1
grep -A3 "== summary" "$OUT/parity_vectoradd.log"; grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 9
tail -n 4 "$OUT/gpu_tests.log"
