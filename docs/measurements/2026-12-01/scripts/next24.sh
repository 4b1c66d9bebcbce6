#!/usr/bin/env bash
# Run 88 (one H200, alone; carry .refk; about 2 min): run 87's control on the same kind of
# machine: vectoradd, both examples, 2 runs, with the record's 100 µs window.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 170 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 2 --skip-test-mode --harness-config $S/window100.yaml --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 10
