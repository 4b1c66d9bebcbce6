#!/usr/bin/env bash
# Session 4 (2026-11-30), GPU call 1, on two H200s of one host, one track per GPU:
#   GPU 0: diag_ipc.py (how a sandboxed worker can map the judge's GPU buffers), then
#          contest parity of mxfp4_mm torch_dequant.py (2 runs);
#   GPU 1: contest parity of mxfp4_mm triton_dot_scaled.py (2 runs).
# The public amd_202602 evaluator takes about 4 minutes per benchmark run, so the runs of
# the mxfp4 pairs are spread over calls and pooled with `contest_parity.py --merge`.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
{
  date -u; git log -1 --format=%H 2>/dev/null
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv
  python -c "import torch, triton; print(torch.__version__, triton.__version__)"; nproc; uname -r
} > "$OUT/machine.txt" 2>&1

track0() {
  export CUDA_VISIBLE_DEVICES=0
  timeout 100 python $S/diag_ipc.py > "$OUT/diag_ipc.log" 2>&1
  timeout 460 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
    --only torch_dequant --runs 2 --skip-test-mode --out "$OUT/mxfp4_torch"
}
track1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 565 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
    --only triton_dot_scaled --runs 2 --skip-test-mode --out "$OUT/mxfp4_triton"
}
track0 > "$OUT/track0.log" 2>&1 &
track1 > "$OUT/track1.log" 2>&1 &
wait
cat "$OUT/diag_ipc.log"; tail -5 "$OUT"/track*.log
