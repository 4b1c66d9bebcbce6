#!/usr/bin/env bash
# The mend after the review, on the GPU (one H200, alone; about 7 min), before the record
# (record1-3.sh). Since run 92: the unmasking and the call after it skip the wake
# handshake, and each case's unmasking round trips are held to its calibration no-ops'
# (integrity.unmasking: flagged beyond 500 µs or the no-ops' own length). Aim: every
# example passes its benchmark under the defaults with no case flagged, and
# integrity.unmasking shows how far below the allowance honest code stays; then the GPU
# tests pass. Seven files come back: machine.txt, log.txt and the five documents.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/next31.db
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
for f in submissions/vectoradd/add_torch.py submissions/vectoradd/add_triton.py \
         submissions/mxfp4_mm/triton_dot_scaled.py submissions/nvfp4_group_gemm/triton_hopper.py \
         submissions/nvfp4_group_gemm/torch_dequant.py; do
  task=$(basename "$(dirname "$f")")
  timeout 120 python runner.py submit "$f" --task "$task" --mode benchmark \
    --json "$OUT/$(basename "$f" .py).json" > /dev/null 2>> "$OUT/log.txt"
done
python $S/unmask_table.py "$OUT"/*.json >> "$OUT/log.txt" 2>&1
timeout 300 python -m pytest -q tests/test_gpu.py >> "$OUT/log.txt" 2>&1
echo "test_gpu rc $?" >> "$OUT/log.txt"; tail -n 40 "$OUT/log.txt"
