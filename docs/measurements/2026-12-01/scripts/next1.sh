#!/usr/bin/env bash
# For the next session's first GPU call (one H200, alone; carry .refk): parity of
# vectoradd (both) and nvfp4 (both), 3 runs each, under the rehearsal as it is now
# (454cd03: fresh inputs written after it) and timing.min_samples (deca76c); about 8 min.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 170 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
timeout 140 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
timeout 250 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only torch --runs 3 --skip-test-mode --out "$OUT/nvfp4_torch" > "$OUT/parity_nvfp4_torch.log" 2>&1
for f in vectoradd nvfp4 nvfp4_torch; do grep -v "^   case" "$OUT/parity_$f.log" | tail -n 9; done
