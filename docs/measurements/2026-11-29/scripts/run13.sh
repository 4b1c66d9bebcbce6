#!/usr/bin/env bash
# Next GPU session (issue 7), one device call: the known workloads against do_bench and
# against "isolated" calls with the harness's semantics in one process, under the default
# (launch time counted) and with GPU time only; then the nvfp4 Triton example 5 times
# with GPU time only.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
timeout 200 python benchmarks/fidelity.py --skip-leaderboard --repeats 0 --out "$OUT/default" \
    2>&1 | tee "$OUT/fidelity_default.log"
timeout 330 python benchmarks/fidelity.py --skip-leaderboard --repeats 5 \
    --config benchmarks/gpu/launch_ahead.yaml --out "$OUT/ahead" 2>&1 | tee "$OUT/fidelity_ahead.log"
