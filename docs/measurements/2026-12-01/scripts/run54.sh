#!/usr/bin/env bash
# Run 54 (2026-12-01): nvfp4 triton_hopper case 3 timed from inside the submission under
# the public evaluator, the harness, and the harness with 0.5 s polling; 3 rounds.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; git log --oneline | head -1; } > "$OUT/machine.txt" 2>&1
timeout 500 python $S/diag_probe_case3.py --reference-kernels .refk --rounds 3 --out "$OUT" \
  --harness-config docs/measurements/2026-11-30/scripts/longspin.yaml > "$OUT/probe.log" 2>&1
cat "$OUT/probe.log" | grep -v "^PROBE" | tail -40
