#!/usr/bin/env bash
# Run 35 (one H200, alone; carry .refk): case 3 of nvfp4 triton_hopper, the worker's wait
# between samples (diag_idle_case3.py); then the pair under contest_parity, 5 runs, with
# judge and worker polling 0.5 s (longspin.yaml, as run 32 with 3 runs).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
D=docs/measurements/2026-11-30/scripts
{ date -u; git log -1 --format=%H 2>/dev/null; nproc; lscpu | grep -i "model name\|mhz"; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor; } > "$OUT/machine.txt" 2>&1
timeout 150 python $D/diag_idle_case3.py --repeats 40 > "$OUT/diag_idle_case3.log" 2>&1
timeout 300 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 5 --skip-test-mode --out "$OUT/nvfp4_triton_longspin" \
  --harness-config $D/longspin.yaml > "$OUT/parity.log" 2>&1
cat "$OUT/machine.txt" "$OUT/diag_idle_case3.log"; grep -v "^   case" "$OUT/parity.log" | tail -n 10
