#!/usr/bin/env bash
# Run 40 (one H200, alone; carry .refk): run 39's bare diagnostic (which had failed on a
# relative path), pinned to five vCPUs in turn, in three processes one after another:
# does the host time of a launch depend on the vCPU, or on the process?
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
for p in 1 2 3; do
  echo "== process $p"
  timeout 100 python $S/diag_host_vectoradd.py .refk/problems/pmpp_v2/vectoradd_py 2>&1
done > "$OUT/bare.log"
cat "$OUT/bare.log"
