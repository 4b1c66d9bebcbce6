#!/usr/bin/env bash
# The contest's own fill as the window (one H200, alone; carry .refk; about 3 min):
# vectoradd, both examples, 3 runs with fill.yaml (timing.window_fill_bytes 268435456:
# pmpp_v2's clear_l2_cache in the worker in place of the 100 µs sleep; run 87: it hides
# 16.9 µs in one process where the public evaluator's hides 16.7). Read beside next26.sh:
# with the windows equal, what is left is the worker's launch speed.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --harness-config $S/fill.yaml --out "$OUT/vectoradd" \
  > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 10
