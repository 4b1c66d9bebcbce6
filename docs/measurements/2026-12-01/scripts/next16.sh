#!/usr/bin/env bash
# Run 72 (session of 2026-12-01 (3), fourth call): run 71 flagged vectoradd's case 0 in 4 of
# 6 runs ("the judge's clock saw 143 µs more per call than the reported time explains"):
# under holding, the round trip of the submission's samples held the placement (Hold.apply,
# run before each sample) while the no-op calibration did not. Now the placement follows
# the reply. 1. What Hold.apply costs there. 2. vectoradd parity (both examples, 2 runs):
# any flag, and each case's gap against its calibration. 3. test_worker and test_cpus.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 60 python $S/hold_cost.py > "$OUT/hold_cost.log" 2>&1; cat "$OUT/hold_cost.log"
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 2 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 12
timeout 150 python -m pytest -q tests/test_cpus.py tests/test_worker.py > "$OUT/tests.log" 2>&1
tail -n 4 "$OUT/tests.log"
