#!/usr/bin/env bash
# Run 52 (one H200, alone; carry .refk): a second run of mxfp4 torch_dequant (run 51 had
# one; pooled with --merge), then nvfp4 triton_hopper again, 3 runs (case 3 at 1.388 in
# run 49, the first under `timing.warm: torch`).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 275 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
  --only torch --runs 1 --skip-test-mode --out "$OUT/mxfp4_torch" > "$OUT/parity_mxfp4_torch.log" 2>&1
echo "parity rc $?" >> "$OUT/parity_mxfp4_torch.log"
timeout 140 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
echo "parity rc $?" >> "$OUT/parity_nvfp4.log"
grep -v "^   case" "$OUT/parity_mxfp4_torch.log" | tail -n 6; grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 8
