#!/usr/bin/env bash
# Run 86 (one H200, alone; about 3.5 min): each evaluator's hidden window measured
# (window_probe.py: the pmpp_v2 fill's GPU length, the harness's 100 µs sleep's real
# length, the host launch each pre-call order hides), then tests/test_gpu.py at HEAD.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; git status --short | head; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv; } > "$OUT/machine.txt" 2>&1
timeout 90 python $S/window_probe.py --reps 50 --out "$OUT" > "$OUT/window_probe.log" 2>&1
echo "rc $?" >> "$OUT/window_probe.log"; cat "$OUT/window_probe.log" | cut -c1-600
timeout 300 python -m pytest -q tests/test_gpu.py > "$OUT/test_gpu.log" 2>&1
echo "rc $?" >> "$OUT/test_gpu.log"; tail -n 15 "$OUT/test_gpu.log"
