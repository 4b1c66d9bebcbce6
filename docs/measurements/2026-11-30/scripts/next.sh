#!/usr/bin/env bash
# For the next session's GPU call (two H200s of one host, nothing else on the host): what
# issues 14 and 16 still need, after commit 8d59bf6. Carry .refk. Everything is written to
# a work folder and packed into $OUT/all.tgz (the device tool returns at most 8 files;
# run 21 lost its logs that way).
#   GPU 0: nvfp4 parity (both examples, 3 runs); the vectoradd Triton pair (3 runs);
#          --mode profile of every example, each output to its own file.
#   GPU 1: the public-problem conformance test, the pairs run 23 did not reach
#          (prefixsum_py's solutions, sort_py, vectoradd_py, vectorsum_py).
# Then, in a later call: two more mxfp4 torch_dequant runs (about 4.5 min each), e.g.
#   python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
#     --only torch_dequant --runs 2 --skip-test-mode --out "$W/mxfp4_torch"
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=$(mktemp -d); export PYTHONUNBUFFERED=1
export REFERENCE_KERNELS=$PWD/.refk
git log -1 --format=%H > "$W/commit.txt" 2>/dev/null
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv > "$W/machine.txt"
track0() {
  export CUDA_VISIBLE_DEVICES=0
  timeout 330 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
    --runs 3 --skip-test-mode --out "$W/nvfp4"
  timeout 150 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
    --only triton --runs 3 --skip-test-mode --out "$W/vectoradd_triton"
  for f in vectoradd/add_torch.py vectoradd/add_triton.py vectoradd/add_inplace.py \
           nvfp4_group_gemm/torch_dequant.py nvfp4_group_gemm/triton_hopper.py \
           mxfp4_mm/torch_dequant.py mxfp4_mm/triton_dot_scaled.py; do
    timeout 40 python runner.py submit "submissions/$f" --mode profile \
      --config docs/measurements/2026-11-30/scripts/no_ncu.yaml \
      > "$W/profile-$(echo "$f" | tr / -).txt" 2>&1
  done
}
track1() {
  export CUDA_VISIBLE_DEVICES=1
  PARITY_OUT=$W/public_problems.json timeout 560 python -m pytest -q -rA \
    tests/test_public_problems.py -k "prefixsum or sort or vectoradd or vectorsum" 2>&1 | tail -30
}
track0 > "$W/track0.log" 2>&1 &
track1 > "$W/track1.log" 2>&1 &
wait
tar czf "$OUT/all.tgz" -C "$W" .
tail -n 20 "$W/track1.log"; grep -h -A8 "== summary" "$W"/track0.log
