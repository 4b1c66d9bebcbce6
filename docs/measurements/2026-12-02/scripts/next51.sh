#!/usr/bin/env bash
# The GPU machine's test files, in two calls of their own (one H200; no carry; each under
# 10 min): `bash next51.sh gpu` runs tests/test_gpu.py, `bash next51.sh rest` runs
# tests/test_adversarial.py and tests/test_sharing.py, every test of them (the CPU ones
# too: run 119 found test_memory_hog_is_contained failing on this machine only, 16 cores
# and CUDA's torch, mended in 465ce18). Written before it runs. The reading: every test
# passes or skips for a stated reason.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
source docs/measurements/2026-12-02/scripts/machine.sh; machine_txt "$OUT/machine.txt"
case "${1:-}" in
  gpu) files=(tests/test_gpu.py) ;;
  rest) files=(tests/test_adversarial.py tests/test_sharing.py) ;;
  *) echo "usage: next51.sh gpu|rest"; exit 2 ;;
esac
timeout 570 python -m pytest -v -rs --durations=10 -p no:cacheprovider "${files[@]}" \
  > "$OUT/tests_$1.log" 2>&1
echo "rc $?" >> "$OUT/tests_$1.log"
grep -E "FAILED|ERROR|SKIPPED" "$OUT/tests_$1.log" | head -20; tail -n 3 "$OUT/tests_$1.log"
