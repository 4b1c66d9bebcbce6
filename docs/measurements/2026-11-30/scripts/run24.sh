#!/usr/bin/env bash
# Run 24 (session 5, one H200, nothing else on the machine): contest parity of the pairs
# that missed or were not measured alone, after commits 4c4edec/8d59bf6 (the two-clock
# check on probes only, the no-op of a whole sample) and the cap of 100 timed samples.
# Carry .refk. Every file is written straight under $OUT (a cut step keeps what ran).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30
{ git log -1 --format=%H 2>/dev/null; nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv; nproc; } > "$OUT/machine.txt"
{
  timeout 330 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
    --runs 3 --skip-test-mode --out "$OUT/nvfp4"
  timeout 110 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
    --only triton --runs 3 --skip-test-mode --out "$OUT/vectoradd_triton"
  timeout 135 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
    --only "submission.py" --runs 3 --out "$OUT/vectoradd_torch"
} > "$OUT/parity.log" 2>&1
grep -A8 "== summary" "$OUT/parity.log" || tail -40 "$OUT/parity.log"
