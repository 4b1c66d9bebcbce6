#!/usr/bin/env bash
# GPU session 2, part 1: overhead variants, a leaderboard batch of every example of every
# task, then the GPU tests and the adversarial corpus on the GPU.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
git rev-parse --short HEAD > "$OUT/commit.txt" 2>/dev/null
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.txt"
timeout 80 python benchmarks/overhead.py --out "$OUT/overhead.json" 2>&1 | tee "$OUT/overhead.log"
timeout 330 python runner.py batch submissions/ --db /tmp/b.db --json "$OUT/batch_all.json" > "$OUT/batch.log" 2>&1
tail -30 "$OUT/batch.log"
python -c "
import json; d=json.load(open('$OUT/batch_all.json')); print('wall', round(d['wall_seconds'],1))
for r in d['results']: print(r['file'], r['status'], round(r['wall_seconds'],1), r['where'], round((r['score_ns'] or 0)/1e3,2), len(r['flags']))"
timeout 175 python -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_adversarial.py --durations=8 2>&1 | tail -25 | tee "$OUT/pytest.log"
