#!/usr/bin/env bash
# GPU session 2, part 3: the context warm-up by kernel, checked; the GPU attacks; honest runs.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
timeout 90 python benchmarks/overhead.py --out "$OUT/overhead3.json" 2>&1 | tee "$OUT/overhead3.log"
timeout 70 python -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_adversarial.py -k "benchmark_mode or event_timer or side_stream" 2>&1 | tail -15 | tee "$OUT/pytest3.log"
timeout ${HONEST_S:-400} python benchmarks/honest_runs.py --runs 10 --config benchmarks/gpu/short_timing.yaml --out "$OUT/honest_gpu_b.json" > "$OUT/honest_b.log" 2>&1
grep -c "run " "$OUT/honest_b.log"; grep -B1 "flag:" "$OUT/honest_b.log" | tail -20; tail -3 "$OUT/honest_b.log"
