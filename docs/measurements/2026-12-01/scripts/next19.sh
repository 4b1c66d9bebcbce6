#!/usr/bin/env bash
# After the record at e9c5f34 (runs 74-80), the misses and the offset, each from inside
# (one H200, alone; carry .refk; about 7 min, 9.3 at most):
#  1. launch_tail.py: vectoradd Triton's case 0, public vs harness (and not held): how many
#     launches outlast the 100 µs window, and which samples read long (3 rounds, ~2.5 min);
#  2. pre_call_memory.py: mxfp4 Triton's 1 µs, the harness's differences one at a time in
#     one process and a judge's stand-in (~1.5 min);
#  3. diag_probe_dequant.py: nvfp4 torch_dequant's calls timed from inside under both
#     evaluators (and not held): wall, CPU time, context switches (2 rounds, ~3.5 min).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv; } > "$OUT/machine.txt" 2>&1
timeout 170 python $S/launch_tail.py --reference-kernels .refk --rounds 3 --out "$OUT" \
  --harness-config $S/hold_off.yaml > "$OUT/launch_tail.log" 2>&1
echo "rc $?" >> "$OUT/launch_tail.log"; grep -E "^round|^rc" "$OUT/launch_tail.log" | cut -c1-400
timeout 120 python $S/pre_call_memory.py --rounds 150 --cases 0 2 4 --out "$OUT" \
  > "$OUT/pre_call_memory.log" 2>&1
echo "rc $?" >> "$OUT/pre_call_memory.log"; tail -n 32 "$OUT/pre_call_memory.log"
timeout 270 python $S/diag_probe_dequant.py --reference-kernels .refk --rounds 2 --out "$OUT" \
  --harness-config $S/hold_off.yaml > "$OUT/probe_dequant.log" 2>&1
echo "rc $?" >> "$OUT/probe_dequant.log"; grep -E "^round|^rc|process:" "$OUT/probe_dequant.log" | cut -c1-300
