#!/usr/bin/env bash
# A candidate change to the engine measured beside the tree, in one device call: the
# vectoradd pair's call trace (benchmarks/call_trace.py) on the tree and on a copy with the
# patch applied, runs alternating, the public loop beside each. Needs the public
# vectoradd_py folder at .refk (a local copy of gpu-mode/reference-kernels).
#   bash benchmarks/gpu/ab_patch.sh PATCH [torch|triton] [RUNS]    (logs to $OUT)
set -u
PATCH=$(realpath "$1"); PAIR=${2:-torch}; RUNS=${3:-2}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
V=$PWD/.refk/problems/pmpp_v2/vectoradd_py
f=$V/submission.py; [ "$PAIR" = triton ] && f=$V/solutions/correct/submission_triton.py
COPY=$(mktemp -d); trap 'rm -rf "$COPY"' EXIT; cp -a . "$COPY/"
(cd "$COPY" && patch -s -p1 < "$PATCH") || { echo "the patch does not apply"; exit 2; }
for run in $(seq 1 "$RUNS"); do
  echo "=== run $run: the tree"
  timeout 150 python benchmarks/call_trace.py "$f" --task "$V" --public-loop --out "$OUT/tree$run"
  echo "=== run $run: the tree with $(basename "$PATCH")"
  (cd "$COPY" && timeout 150 python benchmarks/call_trace.py "$f" --task "$V" \
    --out "$OUT/patched$run")
done
rm -f "$OUT"/tree*/harness*.json "$OUT"/patched*/harness*.json
