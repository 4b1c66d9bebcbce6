#!/usr/bin/env bash
# Issue 9, for a machine with several GPUs (nvidia-h200-x2 or larger): the examples of every
# task plus three test submissions (10) through the local backend on all GPUs, through a
# local Ray instance when ray is importable, and on GPU 0 alone; then compare_batches.py.
# Usage: bash benchmarks/gpu/multi_gpu.sh many|one|ray (one device call each), then, where
# the JSON files came back: python benchmarks/compare_batches.py many.json one.json
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,uuid --format=csv > "$OUT/gpus.txt"
# three more vectoradd submissions from the tests, given the directive that names their task
EXTRA=$(mktemp -d)
for f in fast sleep_1ms sleep_3ms; do
    { echo "#!POPCORN leaderboard vectoradd"; cat "tests/submissions/leaderboard/$f.py"; } > "$EXTRA/$f.py"
done
run() { timeout "$1" python runner.py batch submissions "$EXTRA" --db "$OUT/$2.db" --json "$OUT/$2.json" "${@:3}" > "$OUT/$2.log" 2>&1; tail -3 "$OUT/$2.log"; }
# One step per device call (each fits the 10-minute limit): many, then one, then ray.
case "${1:-many}" in
    many) run 580 many ;;
    one)  CUDA_VISIBLE_DEVICES=0 run 580 one ;;
    ray)  if python -c "import ray" 2>/dev/null; then run 580 ray --backend ray
          else echo "ray is not installed here: the Ray backend was not run"; fi ;;
esac
