#!/usr/bin/env bash
# Run 42 (one H200, alone; carry .refk): run 40 read the bare process's host time around
# vectoradd's torch call at 16-30 µs, the harness worker's at 23-129 µs (runs 38-39).
# Which of the worker's surroundings slows it? diag_host_arena.py (arenas, the worker's sequence), twice.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_ROOT=$PWD
S=docs/measurements/2026-11-30/scripts
for p in 1 2; do
  echo "== process $p"
  timeout 150 python $S/diag_host_arena.py .refk/problems/pmpp_v2/vectoradd_py 2>&1
done > "$OUT/arena.log"
cat "$OUT/arena.log"
