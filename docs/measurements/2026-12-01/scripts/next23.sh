#!/usr/bin/env bash
# Run 87 (one H200, alone; carry .refk; about 4 min): the default window at 60 µs of GPU
# sleep (run 86: pmpp_v2's fill hides 34 µs of host launch, the harness's 100 µs sleep 76):
# window_probe.py at 60 (and the fill itself in the worker's order), then vectoradd, both
# examples, 3 runs.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; git status --short | head; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv; } > "$OUT/machine.txt" 2>&1
timeout 60 python $S/window_probe.py --reps 40 --window-us 60 --out "$OUT" > "$OUT/window_probe.log" 2>&1
echo "rc $?" >> "$OUT/window_probe.log"; cut -c1-420 "$OUT/window_probe.log"
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 12
