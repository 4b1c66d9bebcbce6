#!/usr/bin/env bash
# Session 3 on the H200, one device call each:
#   bash docs/measurements/2026-11-29/scripts/run10.sh fidelity   # issue 7: pinned + frozen heap (the new default)
#                                           # against the old default and GPU time only
#   bash docs/measurements/2026-11-29/scripts/run10.sh honest [RESUME.json]   # issue 6: 10 runs of every example
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ "${1:-fidelity}" = "fidelity" ]; then
    { nproc; lscpu | grep -E "Model name|Thread|Core|Socket|NUMA"; nvidia-smi -L; } > "$OUT/machine.txt" 2>&1
    timeout 290 python benchmarks/fidelity.py --skip-leaderboard --out "$OUT/new" 2>&1 | tee "$OUT/fidelity_new.log"
    timeout 160 python benchmarks/fidelity.py --skip-leaderboard --workloads none \
        --config benchmarks/gpu/unpinned.yaml --out "$OUT/old" 2>&1 | tee "$OUT/fidelity_old.log"
    timeout 105 python benchmarks/fidelity.py --skip-leaderboard --workloads none --repeats 3 \
        --config benchmarks/gpu/launch_ahead.yaml --out "$OUT/ahead" 2>&1 | tee "$OUT/fidelity_ahead.log"
    timeout 25 python -m pytest -q -x tests/test_cpus.py -k gpu_worker 2>&1 | tail -3
else
    resume=()
    [ -n "${2:-}" ] && resume=(--resume "$2")
    python benchmarks/honest_runs.py --runs 10 --config benchmarks/gpu/honest_timing.yaml \
        --stop-after 570 "${resume[@]}" --out "$OUT/honest.json" > "$OUT/honest.log" 2>&1
    grep -B1 "flag:" "$OUT/honest.log" | tail -20; tail -2 "$OUT/honest.log"
fi
