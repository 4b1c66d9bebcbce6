#!/usr/bin/env bash
# The record at one commit again, for the pairs that resolve, with exit_now and the kept
# buffer (one H200, alone; carry .refk; about 9 min, a call of its own). Written before it
# runs. contest_parity.py --interleave, 3 runs a side, test mode skipped: vectoradd's two
# examples and nvfp4 triton_hopper (a round starts only while 300 s have not passed), then
# mxfp4 Triton in the same way (its public evaluator takes about 60 s a run), if 380 s
# have not passed. The reading: issue 14's criterion per pair (contest_parity's own), the
# benchmark walls beside the public's with the harness's split (before, evaluation, after;
# run 112's "after" read 0.77-1.08 s before exit_now, a cross-call comparison only).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"
  echo "code digest $(find harness tasks configs runner.py -type f ! -path '*__pycache__*' \
    | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"; } > "$OUT/machine.txt" 2>&1
W=$(mktemp -d); start=$(date +%s)
timeout 420 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd,nvfp4 \
  --only submission.py --only submission_triton.py --only triton_hopper --runs 3 --interleave \
  --skip-test-mode --out "$W/a" > "$OUT/parity_a.log" 2>&1
echo "a rc $?" >> "$OUT/parity_a.log"; grep -A8 "^== summary" "$OUT/parity_a.log"
cp "$W/a/parity.json" "$OUT/parity_a.json" 2>/dev/null
if [ $(( $(date +%s) - start )) -lt 380 ]; then
  timeout $(( 580 - ($(date +%s) - start) )) python benchmarks/contest_parity.py \
    --reference-kernels .refk --pairs mxfp4 --only triton_dot_scaled --runs 3 --skip-test-mode \
    --out "$W/b" > "$OUT/parity_b.log" 2>&1
  echo "b rc $?" >> "$OUT/parity_b.log"; grep -A3 "^== summary" "$OUT/parity_b.log"
  cp "$W/b/parity.json" "$OUT/parity_b.json" 2>/dev/null
else
  echo "mxfp4 Triton not started (time)"
fi
