#!/usr/bin/env bash
# Session of 2026-12-01 (2), fourth call (one H200, alone; carry .refk), about 7 min.
# With worker.hold_cpu on (8c47bf2): nvfp4 torch_dequant and both vectoradd pairs,
# 3 runs each.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 260 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only torch --runs 3 --skip-test-mode --out "$OUT/nvfp4_torch" > "$OUT/parity_nvfp4_torch.log" 2>&1
grep -v "^   case" "$OUT/parity_nvfp4_torch.log" | tail -n 9
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 12
cd "$OUT" && tar czf raw.tgz nvfp4_torch vectoradd
