#!/usr/bin/env bash
# Run 34 (one H200, alone; carry .refk): case 3 of nvfp4 triton_hopper, what precedes the
# start event, interleaved repeat by repeat (diag_window_case3.py), with the GPU's clocks
# logged beside; then the pair under contest_parity with 5 runs each.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
D=docs/measurements/2026-11-30/scripts
{ date -u; git log -1 --format=%H 2>/dev/null; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 100 > "$OUT/clocks.csv" 2>&1 &
SMI=$!
timeout 200 python $D/diag_window_case3.py --repeats 60 > "$OUT/diag_window_case3.log" 2>&1
kill $SMI
timeout 280 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 5 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity.log" 2>&1
cat "$OUT/diag_window_case3.log"; grep -v "^   case" "$OUT/parity.log" | tail -n 10
