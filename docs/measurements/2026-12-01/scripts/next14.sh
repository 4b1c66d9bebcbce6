#!/usr/bin/env bash
# For the next session's first GPU call (one H200, alone; carry .refk), about 8 min.
# 1. test_cpus.py on the GPU (its freeze-count test changed after run 68 failed it; the
#    hold tests now check the default and both ways of turning it off).
# 2. nvfp4 torch_dequant held (the default, 3 runs) and not held (hold_off.yaml, 2 runs),
#    so that the two stand beside one public set: does holding matter for a call that
#    synchronizes in every group (run 67: 1.179 held, run 58: 1.229 before holding)?
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 120 python -m pytest -q tests/test_cpus.py > "$OUT/test_cpus.log" 2>&1
tail -n 5 "$OUT/test_cpus.log"
timeout 240 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only torch --runs 3 --skip-test-mode --out "$OUT/torch_held" > "$OUT/parity_held.log" 2>&1
grep -v "^   case" "$OUT/parity_held.log" | tail -n 6
timeout 170 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only torch --runs 2 --skip-test-mode --harness-config $S/hold_off.yaml \
  --out "$OUT/torch_not_held" > "$OUT/parity_not_held.log" 2>&1
grep -v "^   case" "$OUT/parity_not_held.log" | tail -n 6
cd "$OUT" && tar czf raw.tgz torch_held torch_not_held
