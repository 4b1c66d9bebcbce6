#!/usr/bin/env bash
# Does the judge's polling (a tight Python loop in a second process) slow the worker's
# host work on the H200 machine's CPUs? The CPU-only neighbour test, then the case-3 probe
# for one round with the judge napping while the worker polls (judge_naps_only.yaml).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
timeout 45 python $S/cpu_spinning_neighbour.py > "$OUT/neighbour.log" 2>&1; cat "$OUT/neighbour.log"
timeout 150 python $S/diag_probe_case3.py --reference-kernels .refk --rounds 1 --out "$OUT/probe" \
  --harness-config $S/judge_naps_only.yaml > "$OUT/probe.log" 2>&1
grep -v "^PROBE" "$OUT/probe.log" | tail -6
