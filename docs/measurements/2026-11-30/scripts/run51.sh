#!/usr/bin/env bash
# Run 51 (one H200, alone; carry .refk): the host-bound PyTorch examples under
# `timing.warm: torch`: nvfp4 torch_dequant, 3 runs each side (public about 50 s a run),
# then mxfp4 torch_dequant, 1 run each side (public about 242 s a run: one fits a call).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 250 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only torch --runs 3 --skip-test-mode --out "$OUT/nvfp4_torch" > "$OUT/parity_nvfp4_torch.log" 2>&1
echo "parity rc $?" >> "$OUT/parity_nvfp4_torch.log"
timeout 295 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
  --only torch --runs 1 --skip-test-mode --out "$OUT/mxfp4_torch" > "$OUT/parity_mxfp4_torch.log" 2>&1
echo "parity rc $?" >> "$OUT/parity_mxfp4_torch.log"
grep -v "^   case" "$OUT/parity_nvfp4_torch.log" | tail -n 8; grep -v "^   case" "$OUT/parity_mxfp4_torch.log" | tail -n 6
