#!/usr/bin/env bash
# Run 26 (session 5, one H200, alone): the last two conformance pairs (vectorsum_py's
# solutions) and a third mxfp4 torch_dequant parity run (runs 20 and 25 had one each).
# Carry .refk. Files straight under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
export REFERENCE_KERNELS=$PWD/.refk
{ uname -r; nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv; nproc; } > "$OUT/machine.txt"
PARITY_OUT=$OUT/public_problems.json timeout 120 python -m pytest -q -rA \
  tests/test_public_problems.py -k "vectorsum and (pytorch or cheat)" > "$OUT/conformance.log" 2>&1
timeout 300 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
  --only torch_dequant --runs 1 --skip-test-mode --out "$OUT/mxfp4_torch" > "$OUT/parity.log" 2>&1
tail -n 5 "$OUT/conformance.log"; tail -n 12 "$OUT/parity.log"
