#!/usr/bin/env bash
# Session 4 (2026-11-30), GPU call 2, two H200s of one host, one track per GPU.
# GPU buffers now travel as file descriptors of VMM arenas (harness/judging/sharing.py),
# and GPU workers run under the full sandbox (Landlock, capability drop, seccomp).
#   GPU 0: the GPU sharing tests; the containment tests (attacks and honest examples)
#          with the worker on the GPU; leaderboard mode of every example with the
#          sandbox on; the sandbox's start-up cost on the GPU; --mode profile of every
#          example (Nsight Compute for one); the GPU profile test.
#   GPU 1: contest parity of nvfp4_group_gemm (both examples, 3 runs each).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
{
  date -u; nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv
  python -c "import torch, triton; print(torch.__version__, triton.__version__)"; nproc; uname -r
  python -c "from harness.judging.landlock import probe; print(probe())" 2>&1; which ncu
} > "$OUT/machine.txt" 2>&1

track0() {
  export CUDA_VISIBLE_DEVICES=0
  echo "=== sharing tests"; timeout 90 python -m pytest -q -rA tests/test_sharing.py 2>&1 | tail -12
  echo "=== containment tests, worker on the GPU"
  CONTAINMENT_DEVICE=cuda timeout 200 python -m pytest -q -rA tests/test_containment.py 2>&1 | tail -25
  for f in vectoradd/add_torch.py vectoradd/add_triton.py vectoradd/add_inplace.py \
           nvfp4_group_gemm/torch_dequant.py nvfp4_group_gemm/triton_hopper.py \
           mxfp4_mm/torch_dequant.py mxfp4_mm/triton_dot_scaled.py; do
    echo "=== leaderboard $f (sandbox on)"
    timeout 60 python runner.py submit "submissions/$f" --mode leaderboard --user session4 \
      --json "$OUT/lb-$(echo $f | tr / -).json" 2>&1 | tail -6
  done
  echo "=== sandbox start-up on the GPU"
  timeout 60 python benchmarks/sandbox_startup.py --device cuda --runs 5 2>&1 | tail -8
  for f in vectoradd/add_torch.py vectoradd/add_triton.py vectoradd/add_inplace.py \
           nvfp4_group_gemm/torch_dequant.py nvfp4_group_gemm/triton_hopper.py \
           mxfp4_mm/torch_dequant.py mxfp4_mm/triton_dot_scaled.py; do
    echo "=== profile $f (PyTorch profiler)"
    timeout 40 python runner.py submit "submissions/$f" --mode profile \
      --config docs/measurements/2026-11-30/scripts/no_ncu.yaml 2>&1 | tail -30
  done
  echo "=== profile under Nsight Compute: vectoradd add_torch.py, one case"
  timeout 40 python runner.py submit submissions/vectoradd/add_torch.py --mode profile \
    --case "size: 4096; seed: 7" 2>&1 | tail -20
  echo "=== GPU profile test"; timeout 60 python -m pytest -q -rA tests/test_profile.py -k gpu 2>&1 | tail -5
}
track1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 555 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
    --runs 3 --skip-test-mode --out "$OUT/nvfp4"
}
track0 > "$OUT/track0.log" 2>&1 &
track1 > "$OUT/track1.log" 2>&1 &
wait
grep -E "passed|failed|PASSED|FAILED|CRASHED|error|start-up|summary|ratio" "$OUT/track0.log" | head -60
tail -n 12 "$OUT/track1.log"
