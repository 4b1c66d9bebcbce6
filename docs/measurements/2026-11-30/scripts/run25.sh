#!/usr/bin/env bash
# Run 25 (session 5, two H200s of one host, a track per GPU, each on its own half of the
# CPUs so neither takes the other's cores). Carry .refk.
#   GPU 0 (CPUs 0-15): does the seccomp filter slow host code here (diag_speculation.py)?
#     does a sleep in the hidden window slow the calls behind it (diag_window.py)?
#     nvfp4 triton_hopper parity, 3 runs (run 24 cut its third); mxfp4 torch_dequant, 1 run.
#   GPU 1 (CPUs 16-31): the conformance pairs run 23 did not reach; --mode profile of every
#     example; the sandbox's start-up cost on the GPU (test mode, sandbox on and off).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
export REFERENCE_KERNELS=$PWD/.refk
{ uname -r; nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv; nproc; } > "$OUT/machine.txt"
track0() {
  W=$1; export CUDA_VISIBLE_DEVICES=0
  timeout 60 python $S/diag_speculation.py > "$W/diag_speculation.txt" 2>&1
  timeout 60 python $S/diag_window.py > "$W/diag_window.txt" 2>&1
  timeout 170 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
    --only triton --runs 3 --skip-test-mode --out "$W/nvfp4_triton"
  timeout 280 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
    --only torch_dequant --runs 1 --skip-test-mode --out "$W/mxfp4_torch"
}
track1() {
  W=$1; export CUDA_VISIBLE_DEVICES=1
  PARITY_OUT=$W/public_problems.json timeout 360 python -m pytest -q -rA \
    tests/test_public_problems.py -k "prefixsum or sort or vectoradd or vectorsum" 2>&1 | tail -30
  for f in vectoradd/add_torch.py vectoradd/add_triton.py vectoradd/add_inplace.py \
           nvfp4_group_gemm/torch_dequant.py nvfp4_group_gemm/triton_hopper.py \
           mxfp4_mm/torch_dequant.py mxfp4_mm/triton_dot_scaled.py; do
    timeout 30 python runner.py submit "submissions/$f" --mode profile --no-record \
      --config $S/no_ncu.yaml --json "$W/profile-$(echo "$f" | tr / -).json" \
      > "$W/profile-$(echo "$f" | tr / -).txt" 2>&1
  done
  for i in 1 2; do
    for c in on off; do
      cfg=(); [ $c = off ] && cfg=(--config $S/sandbox_off.yaml)
      timeout 30 python runner.py submit submissions/vectoradd/add_torch.py --mode test \
        --no-record "${cfg[@]}" --json "$W/startup-$c-$i.json" > /dev/null 2>&1
    done
  done
}
mkdir -p /tmp/t0 /tmp/t1
taskset -c 0-15 bash -c "$(declare -f track0); S=$S; track0 /tmp/t0" > "$OUT/track0.log" 2>&1 &
taskset -c 16-31 bash -c "$(declare -f track1); S=$S; track1 /tmp/t1" > "$OUT/track1.log" 2>&1 &
wait
tar czf "$OUT/track0.tgz" -C /tmp/t0 . ; tar czf "$OUT/track1.tgz" -C /tmp/t1 .
cat /tmp/t0/diag_speculation.txt /tmp/t0/diag_window.txt; tail -n 8 "$OUT/track1.log"
grep -h -A3 "== summary" "$OUT/track0.log"
