#!/usr/bin/env bash
# For a later GPU call (one H200, alone; carry .refk): the public-problem conformance test
# again at the current commit (runs 23, 25 and 26 passed all 24 pairs at 4c4edec), in two
# halves of 12 pairs that each fit a device call (about 7 min): `bash next4.sh 1`, then 2.
set -u
case "${1:-}" in
  1) K="conv2d or grayscale or histogram or matmul" ;;
  2) K="prefixsum or sort or vectoradd or vectorsum" ;;
  *) echo "usage: next4.sh 1|2 (which half of the pmpp_v2 folders)" >&2; exit 2 ;;
esac
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
export REFERENCE_KERNELS=$PWD/.refk
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
PARITY_OUT=$OUT/public_problems.json timeout 560 python -m pytest -q -rA --durations=5 \
  tests/test_public_problems.py -k "$K" > "$OUT/conformance.log" 2>&1
tail -n 30 "$OUT/conformance.log"
