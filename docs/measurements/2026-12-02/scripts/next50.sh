#!/usr/bin/env bash
# The conformance test again, now that it writes both processes' walls (one H200; carry
# .refk; about 6 min). As 2026-12-01/scripts/final4.sh: tests/test_public_problems.py on
# the 24 pmpp_v2 pairs, two halves of 12 at once (each half's public and harness runs
# share the machine with the other half alike). Written before it runs. The reading: the
# verdicts (24 of 24 agreeing, as run 108), and per pair `harness_wall_s` (the process's)
# beside the public evaluator's process wall: the count of pairs where the harness is
# at or below, and the sums.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
export REFERENCE_KERNELS=$PWD/.refk
source docs/measurements/2026-12-02/scripts/machine.sh; machine_txt "$OUT/machine.txt"
half() {
  PARITY_OUT=$OUT/public_problems_$1.json timeout 570 python -m pytest -q -rA --durations=5 \
    -p no:cacheprovider tests/test_public_problems.py -k "$2" > "$OUT/conformance_$1.log" 2>&1
  echo "half $1 rc $?" >> "$OUT/conformance_$1.log"
}
half 1 "conv2d or grayscale or histogram or matmul" &
half 2 "prefixsum or sort or vectoradd or vectorsum" &
wait
for h in 1 2; do grep -E "passed|failed|error|rc " "$OUT/conformance_$h.log" | tail -n 3; done
