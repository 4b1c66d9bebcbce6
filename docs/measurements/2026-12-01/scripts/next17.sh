#!/usr/bin/env bash
# For a later GPU call (one H200, alone; about 1.5 min): pre_call_idle.py, whether the
# 1 ms GPU sleep before the worker's start event explains mxfp4 Triton's constant
# 0.7-1.4 µs per call above amd_202602/eval.py (runs 20-75). One bare process, no harness.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv; } > "$OUT/machine.txt" 2>&1
timeout 150 python docs/measurements/2026-12-01/scripts/pre_call_idle.py --rounds 150 \
  --cases 0 2 4 --out "$OUT" > "$OUT/pre_call_idle.log" 2>&1
echo "rc $?" >> "$OUT/pre_call_idle.log"
tail -n 25 "$OUT/pre_call_idle.log"
