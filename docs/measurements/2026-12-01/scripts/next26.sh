#!/usr/bin/env bash
# The worker's host speed on the GPU machine (one H200, alone; about 7 min): runs 83-88
# found the worker's launches slower than the public process's (vectoradd 22-75 µs against
# 23-31) where the CPU machine shows no worker penalty. benchmarks/host_speed.py: 2000 small
# torch operators on CUDA tensors and a pure-Python loop, a bare process against the harness
# (defaults, no seccomp, no sandbox, not held, the judge napping), 3 rounds.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
cd benchmarks && timeout 500 python host_speed.py --device cuda --rounds 3 \
  --out "$OUT/host_speed.json" > "$OUT/host_speed.log" 2>&1
echo "rc $?" >> "$OUT/host_speed.log"; cat "$OUT/host_speed.log"
