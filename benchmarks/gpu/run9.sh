#!/usr/bin/env bash
# Ready for the next GPU session: the remaining honest runs (issue 6) in one call,
# then `bash benchmarks/gpu/run9.sh fidelity` for issue 7 in a second call.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ "${1:-honest}" = "fidelity" ]; then
    timeout 580 python benchmarks/fidelity.py --skip-leaderboard --out "$OUT" 2>&1 | tee "$OUT/fidelity.log"
else
    timeout 585 python benchmarks/honest_runs.py --runs "${RUNS:-5}" --config benchmarks/gpu/short_timing.yaml \
        --out "$OUT/honest.json" > "$OUT/honest.log" 2>&1
    grep -B1 "flag:" "$OUT/honest.log" | tail -20; tail -2 "$OUT/honest.log"
fi
