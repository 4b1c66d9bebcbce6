#!/usr/bin/env bash
# Why mxfp4_mm torch_dequant read 1.363 with timing.rehearse_late (record2.sh, run 96)
# against 0.989 in the defaults' record: the harness alone (about 2 min), the example under
# the defaults and under late.yaml in turn, twice each, with the worker's own account per
# case (says_table.py: pre, lead, host launch, sync) and the unmasking check. Hypothesis:
# the kernel is host-bound on the smaller cases (some 60 launches), and in the late order the
# worker's launches are slower (it unmasked just before, off the clock, without a wake);
# if so host_ns differs between the orders by about the score's difference.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/next32.db
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
for i in 1 2; do
  for order in default late; do
    extra=""; [ $order = late ] && extra="--config $S/late.yaml"
    timeout 120 python runner.py submit submissions/mxfp4_mm/torch_dequant.py --task mxfp4_mm \
      --mode benchmark $extra --json "$OUT/${order}_$i.json" > /dev/null 2>> "$OUT/log.txt"
  done
done
for order in default late; do
  python $S/says_table.py "$OUT"/${order}_*.json >> "$OUT/log.txt" 2>&1
done
python $S/unmask_table.py "$OUT"/late_*.json >> "$OUT/log.txt" 2>&1
grep -E "==|case" "$OUT/log.txt" | head -60
