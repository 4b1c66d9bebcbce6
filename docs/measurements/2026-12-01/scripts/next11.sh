#!/usr/bin/env bash
# Session of 2026-12-01 (2), third call (one H200, alone; carry .refk), about 6 min.
# Run 65 found the public evaluator's process on one CPU (15) in every burst and the
# worker on a different CPU almost every sample. worker.hold_cpu (new, default on) holds
# the worker's calling thread on the last CPU and keeps every other thread off it.
# The case-3 probe, 3 rounds (default = hold on; hold_off.yaml beside), then nvfp4 Triton
# parity, 3 runs each, under the default.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; git log --oneline -1 2>/dev/null; } > "$OUT/machine.txt" 2>&1
timeout 230 python $S/diag_probe_case3.py --reference-kernels .refk --rounds 3 --out "$OUT/probe" \
  --harness-config $S/hold_off.yaml > "$OUT/probe.log" 2>&1
grep -v "^PROBE" "$OUT/probe.log" | tail -24
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 12
cd "$OUT" && tar czf raw.tgz probe nvfp4_triton
