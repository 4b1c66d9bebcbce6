#!/usr/bin/env bash
# The mends after the two reviews, on the GPU (one H200, alone; about 8 min), before the
# record (record1-3.sh). Since run 92: the unmasking and the call after it skip the wake
# handshake; each case's unmasking round trips are held to what the judge expects without
# the submission (integrity.unmasking: the pre-import no-ops' plus its own XOR; flagged
# beyond 500 µs or that expectation); behind the window the scored samples are on both
# clocks, their sleep counted (integrity.scored_clocks). Aim: every example passes its
# benchmark under the defaults with no case flagged, and both records show how far below
# their allowances honest code stays; then the GPU tests pass, and the corpus's GPU
# attacks (the two mailbox hooks of the second review among them) are caught, and the
# CPU tensors' key stream drawn on the GPU round-trips (27212f8). Seven files come back:
# machine.txt, log.txt and the five documents.
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
timeout 360 python -m pytest -q tests/test_gpu.py tests/test_adversarial.py tests/test_masking.py \
  -k "gpu or mailbox or patched_event or side_stream" >> "$OUT/log.txt" 2>&1
echo "test_gpu rc $?" >> "$OUT/log.txt"; tail -n 40 "$OUT/log.txt"
