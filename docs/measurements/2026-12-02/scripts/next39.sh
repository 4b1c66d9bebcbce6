#!/usr/bin/env bash
# What sets the worker's launch speed (one H200, alone; about 5 min; no carry). Runs 83-88
# found the worker's launches slower than the public process's (vectoradd's Triton example:
# host launch medians 27-66 µs a case against 22-31), and run 104's only GPU-bound miss is
# that example's 6.5 µs case (1.250; in one of its runs every launch took 60-100 µs, median
# 76, and each sample showed what outlasted the window). `benchmarks/host_speed.py` times
# the same host-bound submission in a bare process (fresh, as a contest's evaluator: events
# around the call, the GPU idle before it) and in the harness under settings variants,
# alternating, 3 rounds, two kinds of 300 one-block Triton launches a call:
#   triton        reading and writing memory the call allocated;
#   triton_input  reading the call's input: in the harness the judge's memory mapped into
#                 the worker (cuda_vmm), in the bare process an ordinary allocation. Triton's
#                 launcher calls cuPointerGetAttribute on every pointer of every launch.
# Variants: the defaults, no sandbox (no Landlock, audit hook or seccomp filter), not held.
# Written before it runs. The harness hides up to 100 µs of a call's 6-20 ms, under 2%:
# a ratio to the bare process within 1.03 is no penalty. What it can show: (a) on triton,
# whether the worker launches slower at all, and whether a variant removes it (then that
# mechanism is the candidate); (b) triton_input over triton in the harness, against the
# same in the bare process: above 1.03 says launches on mapped memory cost more, and the
# remedy to try is giving the call its inputs in the worker's own allocations (the late
# order's unmasking could write them there at no extra pass). Neither changes a default
# before vectoradd's case 0 confirms it beside the public evaluator.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; python -c "import triton; print('triton', triton.__version__)"; } > "$OUT/machine.txt" 2>&1
cd benchmarks && timeout 420 python host_speed.py --device cuda --rounds 3 --kinds triton triton_input \
  --variants default no_sandbox not_held --out "$OUT/host_speed.json" > "$OUT/host_speed.log" 2>&1
echo "rc $?" >> "$OUT/host_speed.log"; cat "$OUT/host_speed.log"
