#!/usr/bin/env bash
# The record at one commit, part 3 of 3 (about 9 min): mxfp4_mm torch_dequant,
# 2 more runs. Then, here: python benchmarks/contest_parity.py --merge \
#   <part1>/vectoradd/parity.json <part1>/nvfp4/parity.json <part2>/mxfp4_triton/parity.json \
#   <part2>/mxfp4_torch_a/parity.json <part3>/mxfp4_torch_b/parity.json
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; } > "$OUT/machine.txt" 2>&1
timeout 570 python benchmarks/contest_parity.py ${PARITY_EXTRA:-} --reference-kernels .refk --pairs mxfp4 \
  --only torch --runs 2 --skip-test-mode --out "$OUT/mxfp4_torch_b" > "$OUT/parity_mxfp4_torch_b.log" 2>&1
grep -v "^   case" "$OUT/parity_mxfp4_torch_b.log" | tail -n 4
