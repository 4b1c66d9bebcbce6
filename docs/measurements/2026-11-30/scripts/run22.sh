#!/usr/bin/env bash
# Session 4, GPU call 3 (one H200): why did nvfp4 triton_hopper.py read 3.5x in run 21?
# The same benchmark run under: A the current default (VMM arenas, full sandbox); B the
# sandbox off; C the sandbox with capabilities kept; D commit c56818f (torch CUDA IPC,
# seccomp-only GPU workers; carried as .old). Then the failing GPU profile test.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/machine.txt"
one() {  # label, then arguments
  local label=$1; shift
  echo "=== $label"
  timeout 90 "$@" --mode benchmark --no-record 2>&1 | grep -E "^│|score|PASSED|FAILED|CRASHED|flag|containment" | head -14
}
one "A default" python runner.py submit submissions/nvfp4_group_gemm/triton_hopper.py
one "B sandbox off" python runner.py submit submissions/nvfp4_group_gemm/triton_hopper.py --config $S/sandbox_off.yaml --allow-partial-containment
one "C capabilities kept" python runner.py submit submissions/nvfp4_group_gemm/triton_hopper.py --config $S/keep_caps.yaml
(cd .old && one "D commit c56818f" python runner.py submit submissions/nvfp4_group_gemm/triton_hopper.py)
echo "=== GPU profile test"
timeout 60 python -m pytest -q -x tests/test_profile.py -k gpu_profile 2>&1 | tail -30
