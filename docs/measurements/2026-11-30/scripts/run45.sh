#!/usr/bin/env bash
# Run 45 (one H200, alone; carry .refk): diag_two_process.py, a judge and a worker reduced
# to their rhythm, three variants of where the L2 flush runs, with and without the
# 100 µs GPU sleep.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
timeout 240 python $S/diag_two_process.py .refk/problems/pmpp_v2/vectoradd_py > "$OUT/two_process.log" 2>&1
cat "$OUT/two_process.log"
