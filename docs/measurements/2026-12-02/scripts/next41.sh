#!/usr/bin/env bash
# Where the masking of nvfp4's CPU-side inputs spends its time, and whether it leaves the
# call a cost (one H200, alone; about 2.5 min; no carry). `benchmarks/mask_cost.py` on one
# sample's CPU-side inputs (every call's scale factors, in shared-memory files as the
# harness maps them) of cases 0 and 3, 7 rounds: the key stream's draw, one side's
# masking (`xor_mask`), and torch_dequant's copies of those inputs to the GPU right after
# the unmasking, right after a plain write of the same bytes, and again. Written before it
# runs. The reading: copy_after_unmask over copy_after_write above 1.10 on the median
# (beyond both their own round-to-round spreads) says the unmasking leaves the call a cost
# (run 110's 0.87x), to be found in its parts before anything changes; within 1.10 it is
# not in this process's unmasking, and next40.sh's whole-harness comparison stands alone.
# draw and xor_mask, times two sides and the calibration's no-ops, say how much of
# triton_hopper's calibration (5-17 s, run 110) the masking is. Then the GPU tests of the
# held CPU (tests/test_cpus.py), changed since run 110: held cores are now claimed
# machine-wide (a lock file per core); a single evaluation must hold the same CPU as before.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; } > "$OUT/machine.txt" 2>&1
for c in 0 3; do
  timeout 240 python benchmarks/mask_cost.py --device cuda --case $c --rounds 7 \
    --out "$OUT/mask_cost_case$c.json" > "$OUT/mask_cost_case$c.log" 2>&1
  echo "rc $?" >> "$OUT/mask_cost_case$c.log"; cat "$OUT/mask_cost_case$c.log"
done
timeout 150 python -m pytest -q -rs tests/test_cpus.py > "$OUT/cpus_tests.log" 2>&1
echo "tests rc $?" >> "$OUT/cpus_tests.log"; tail -n 6 "$OUT/cpus_tests.log"
