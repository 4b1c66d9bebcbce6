#!/usr/bin/env bash
# Session 2026-11-30, GPU call 2, on two H200s of one host: two tracks at once, one GPU
# each (a timing never shares its GPU). Needs .refk (a copy of gpu-mode/reference-kernels).
#   GPU 0: contest parity of nvfp4_group_gemm (both examples, 3 runs each), then of the
#          public pmpp_v2 vectoradd_py folder (both files, 3 runs each, test-mode walls),
#          then --mode profile of every example (Nsight Compute for one);
#   GPU 1: contest parity of mxfp4_mm (both examples, 3 runs each), then the public-problem
#          conformance test (every pmpp_v2 folder, test mode), then the containment
#          attacks with the worker on the GPU.
# Every worker runs under the sandbox (the default). Logs and JSON go to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 REFERENCE_KERNELS=$PWD/.refk
{
  date -u; nvidia-smi --query-gpu=index,name,uuid,clocks.sm,clocks.max.sm --format=csv
  python -c "import torch, triton; print(torch.__version__, triton.__version__)"; nproc; uname -r
  python -c "from harness.judging.landlock import probe; print(probe())" 2>&1
  which ncu
} > "$OUT/machine.txt" 2>&1

parity() {  # pairs, runs, extra args...
  local pairs=$1 runs=$2; shift 2
  python benchmarks/contest_parity.py --reference-kernels .refk --pairs "$pairs" --runs "$runs" \
    --out "/tmp/parity-$pairs" "$@"
  cp "/tmp/parity-$pairs/parity.json" "$OUT/parity_$pairs.json"
}

track0() {
  export CUDA_VISIBLE_DEVICES=0
  timeout 300 bash -c "$(declare -f parity); OUT=$OUT parity nvfp4 3 --skip-test-mode"
  timeout 200 bash -c "$(declare -f parity); OUT=$OUT parity vectoradd 3"
  for f in vectoradd/add_torch.py vectoradd/add_triton.py vectoradd/add_inplace.py \
           nvfp4_group_gemm/torch_dequant.py nvfp4_group_gemm/triton_hopper.py \
           mxfp4_mm/torch_dequant.py mxfp4_mm/triton_dot_scaled.py; do
    echo "=== profile $f (PyTorch profiler only)"
    timeout 30 python runner.py submit "submissions/$f" --mode profile \
      --config docs/measurements/2026-11-30/scripts/no_ncu.yaml 2>&1 | tail -28
  done
  echo "=== profile under Nsight Compute: vectoradd add_torch.py, one case"
  timeout 40 python runner.py submit submissions/vectoradd/add_torch.py --mode profile \
    --case "size: 4096; seed: 7" 2>&1 | tail -20
}

track1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 220 bash -c "$(declare -f parity); OUT=$OUT parity mxfp4 3 --skip-test-mode"
  PARITY_OUT=$OUT/public_problems.json timeout 240 python -m pytest -q -rA \
    tests/test_public_problems.py 2>&1 | tail -40
  CONTAINMENT_DEVICE=cuda timeout 110 python -m pytest -q -rA tests/test_containment.py \
    -k "databases or secret or judges_memory or tcp or honest" 2>&1 | tail -25
}

timeout 590 bash -c "$(declare -f parity track0); OUT=$OUT track0" > "$OUT/track0.log" 2>&1 &
timeout 590 bash -c "$(declare -f parity track1); OUT=$OUT track1" > "$OUT/track1.log" 2>&1 &
wait
grep -h -A14 "== summary" "$OUT"/track*.log
