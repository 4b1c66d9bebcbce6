#!/usr/bin/env bash
# What sets the worker's launch speed (one H200, alone; about 6 min; no carry). Runs 83-88
# found the worker's launches slower than the public process's (vectoradd's Triton example:
# host launch medians 27-66 µs a case against 22-31), and run 104's only GPU-bound miss is
# that example's 6.5 µs case (1.250). `benchmarks/host_speed.py` times the same host-bound
# submission in a bare process (fresh, as a contest's evaluator: events around the call,
# the GPU idle before it) and in the harness under settings variants, alternating, 3 rounds:
# `triton` (300 launches of a one-block Triton kernel a call) and `dispatch` (2000 small
# torch operators). Variants: the defaults, no sandbox (no Landlock, audit hook or seccomp
# filter), not held (no CPU of its own for the calling thread), the judge napping instead
# of polling while it waits. Written before it runs. What it can show: the default's ratio
# to the bare process on `triton` (the harness hides up to 100 µs of the call's ~6-10 ms,
# about 1%: a ratio within 1.03 is no penalty). Where the default reads above 1.03 and one
# variant brings it within 1.03 of the bare process, that variant's mechanism is the
# candidate cause, to be confirmed on vectoradd's case 0 before any default changes.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
cd benchmarks && timeout 480 python host_speed.py --device cuda --rounds 3 --kinds triton dispatch \
  --variants default no_sandbox not_held judge_naps --out "$OUT/host_speed.json" > "$OUT/host_speed.log" 2>&1
echo "rc $?" >> "$OUT/host_speed.log"; cat "$OUT/host_speed.log"
