#!/usr/bin/env bash
# GPU session 2, part 2: the remaining GPU tests, the overhead floors, honest runs.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
timeout 110 python -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_adversarial.py -k "benchmark_mode or event_timer or side_stream" 2>&1 | tail -15 | tee "$OUT/pytest2.log"
timeout 70 python benchmarks/overhead.py --out "$OUT/overhead2.json" 2>&1 | tee "$OUT/overhead2.log"
timeout ${HONEST_S:-380} python benchmarks/honest_runs.py --runs 10 --config benchmarks/gpu/short_timing.yaml --out "$OUT/honest_gpu_a.json" > "$OUT/honest_a.log" 2>&1
tail -40 "$OUT/honest_a.log"
