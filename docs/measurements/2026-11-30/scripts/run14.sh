#!/usr/bin/env bash
# Session 2026-11-30, GPU call 1: the new timing semantics on the H200. Examples in test
# mode, then contest parity: the public vectoradd folder (3 runs each), the flagship tasks
# under their contests' evaluators (1 run each, a first look). Needs .refk (a copy of
# gpu-mode/reference-kernels) carried beside the checkout.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
{
  date -u; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
  python -c "import torch, triton; print(torch.__version__, triton.__version__)"
  git log --oneline | head -1
} > "$OUT/machine.txt" 2>&1
timeout 150 python -m pytest -q -x tests/test_gpu.py -k "examples_pass_every_test or benchmark_mode_uses" \
  > "$OUT/pytest.log" 2>&1; echo "pytest rc=$?" >> "$OUT/pytest.log"
timeout 240 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --out "$OUT/va" > "$OUT/parity_vectoradd.log" 2>&1
cp "$OUT/va/parity.json" "$OUT/parity_vectoradd.json" 2>/dev/null; rm -rf "$OUT/va"
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4,mxfp4 \
  --runs 1 --skip-test-mode --out "$OUT/fl" > "$OUT/parity_flagship.log" 2>&1
cp "$OUT/fl/parity.json" "$OUT/parity_flagship.json" 2>/dev/null; rm -rf "$OUT/fl"
tail -5 "$OUT"/parity_*.log
