#!/usr/bin/env bash
# GPU session part 3: the GPU tests, then a leaderboard batch of the examples.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
timeout 200 python -m pytest -q tests/test_gpu.py tests/test_adversarial.py -k "gpu or event_timer or side_stream or examples or cuda or compile or seed or benchmark_mode" -p no:cacheprovider 2>&1 | tail -12
mkdir -p /tmp/ex && cp submissions/vectoradd/*.py submissions/nvfp4_group_gemm/triton_hopper.py submissions/mxfp4_mm/triton_dot_scaled.py /tmp/ex/
# one task per batch: the vectoradd examples, then the two Triton flagship examples
timeout 90 python runner.py batch submissions/vectoradd --task vectoradd --db /tmp/b.db --json "$OUT/batch_vectoradd.json" 2>&1 | tail -4
timeout 75 python runner.py batch submissions/nvfp4_group_gemm/triton_hopper.py --task nvfp4_group_gemm --db /tmp/b.db --json "$OUT/batch_nvfp4.json" 2>&1 | tail -3
timeout 75 python runner.py batch submissions/mxfp4_mm/triton_dot_scaled.py --task mxfp4_mm --db /tmp/b.db --json "$OUT/batch_mxfp4.json" 2>&1 | tail -3
for f in "$OUT"/batch_*.json; do python -c "
import json,sys; d=json.load(open('$f')); print('$f'.split('/')[-1], 'wall', round(d['wall_seconds'],1), [(r['file'].split('/')[-1], r['status'], round(r['wall_seconds'],1), r['where'], round((r['score_ns'] or 0)/1e3,2)) for r in d['results']])"; done
