#!/usr/bin/env bash
# After runs 94-98 and next33.sh (one H200, alone; carry .refk; about 5.5 min).
# 1) vectoradd parity under the defaults, 3 runs: integrity.noise_retries on the GPU (a case
# flagged by a slow spell of the host is timed again; run 95 flagged honest case 0 at 325 µs):
# aim, no honest case flagged; a retry shows as "[timed again: case N]" on its run line.
# 2) mxfp4 torch_dequant, the harness alone, defaults and late.yaml alternating, 3 each (run
# 97: the late order read about 10% higher on this host-bound example, 2 runs each): whether
# that holds, with the worker's account (says_table.py). record3.sh's second half is not
# run: with runs 96 and 98 at 1.363 and 1.130, no third run brings the pooled median of
# mxfp4 torch_dequant under the late rehearsal within the criterion.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/next34.db
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
grep -E "run [0-9]|ratio" "$OUT/parity_vectoradd.log" | grep -v "^   case" | tail -n 8
for i in 1 2 3; do
  for order in default late; do
    extra=""; [ $order = late ] && extra="--config $S/late.yaml"
    timeout 60 python runner.py submit submissions/mxfp4_mm/torch_dequant.py --task mxfp4_mm \
      --mode benchmark $extra --json "$OUT/mx_${order}_$i.json" > /dev/null 2>> "$OUT/mx.log"
  done
done
for order in default late; do python $S/says_table.py "$OUT"/mx_${order}_*.json >> "$OUT/mx.log" 2>&1; done
# at most 8 files come back: the six documents in one archive
tar -czf "$OUT/mx_json.tgz" -C "$OUT" $(cd "$OUT" && ls mx_*.json) && rm -f "$OUT"/mx_*.json
grep -E "==| case" "$OUT/mx.log" | head -50
