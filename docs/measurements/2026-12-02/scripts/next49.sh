#!/usr/bin/env bash
# Test-mode walls like with like (one H200, alone; carry .refk; about 9 min, a call of its
# own). Written before it runs. `contest_parity.py --runs 0`: each pair's test mode once,
# the public evaluator's process then the harness's process (runner.py submit --mode test),
# both walls timed around the whole process by the script. Pairs: vectoradd's two
# examples, nvfp4's two, mxfp4's two; up to 3 rounds, a round starting only while 300 s
# have not passed. Runs 104-110 skipped test mode, and the conformance test's walls until
# run 108 set the harness's evaluation beside the public's process. The reading: per pair
# the median of the rounds, harness / public; the issue asks for at most the public's.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
source docs/measurements/2026-12-02/scripts/machine.sh; machine_txt "$OUT/machine.txt"
W=$(mktemp -d); start=$(date +%s)
for i in 1 2 3; do
  [ $(( $(date +%s) - start )) -lt 300 ] || { echo "round $i not started (time)" | tee -a "$OUT/rounds.txt"; break; }
  timeout $(( 590 - ($(date +%s) - start) )) python benchmarks/contest_parity.py \
    --reference-kernels .refk --runs 0 --out "$W/r$i" > "$OUT/round_$i.log" 2>&1
  echo "round $i rc $?" >> "$OUT/round_$i.log"
  cp "$W/r$i/parity.json" "$OUT/parity_$i.json" 2>/dev/null
  grep -E "test mode wall|rc " "$OUT/round_$i.log" | tee -a "$OUT/rounds.txt"
done
