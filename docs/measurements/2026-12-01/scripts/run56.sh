#!/usr/bin/env bash
# Run 56 (2026-12-01): parity under timing.rehearse (the default of e12fce3): vectoradd
# (both), nvfp4 (both), 3 runs each, one H200, alone.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
timeout 150 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
timeout 215 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only torch --runs 3 --skip-test-mode --out "$OUT/nvfp4_torch" > "$OUT/parity_nvfp4_torch.log" 2>&1
for f in vectoradd nvfp4 nvfp4_torch; do grep -v "^   case" "$OUT/parity_$f.log" | tail -n 9; done
