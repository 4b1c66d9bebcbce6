#!/usr/bin/env bash
# Run 29 (one H200, alone; carry .refk): the walls after the head start (the worker
# starts before the judge imports torch) and the warm-up that counts calls, beside the
# public evaluators, with parity checked again on the same pairs.
#  1. one test-mode run: the head start is used on the GPU (harness.head_start, startup)
#  2. vectoradd torch and Triton, 3 runs each, benchmark and test mode (walls, ratios)
#  3. vectoradd torch with the head start off, 2 runs (its share of the wall)
#  4. the conformance pairs whose harness wall was longer (sort_py, vectorsum_py): walls
#  5. nvfp4 triton_hopper, 3 runs (the warm-up of one sample per case)
# Files straight under $OUT (at most 8 come back).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
D=docs/measurements/2026-11-30/scripts
printf "worker:\n  head_start: false\n" > /tmp/nohead.yaml
{
  date -u; nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv
  python runner.py submit submissions/vectoradd/add_torch.py --mode test --no-record \
    --json /tmp/t.json > /tmp/t.log 2>&1; echo "rc $?"; tail -n 3 /tmp/t.log
  python -c "import json; d=json.load(open('/tmp/t.json')); print('head_start', d['harness'].get('head_start'), 'wall', d['wall_seconds'], 'startup', d['startup_seconds'])"
} > "$OUT/machine.txt" 2>&1
grep -q "head_start True" "$OUT/machine.txt" || { cat "$OUT/machine.txt" /tmp/t.log; exit 1; }
timeout 150 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --only "submission.py" --runs 3 --out "$OUT/vectoradd_torch" > "$OUT/parity.log" 2>&1
timeout 150 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --only "submission_triton" --runs 3 --out "$OUT/vectoradd_triton" >> "$OUT/parity.log" 2>&1
timeout 60 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --only "submission.py" --runs 2 --skip-test-mode --out "$OUT/vectoradd_nohead" \
  --harness-config /tmp/nohead.yaml >> "$OUT/parity.log" 2>&1
REFERENCE_KERNELS=.refk PARITY_OUT=$OUT/public_problems.json timeout 200 python -m pytest -q -rA \
  tests/test_public_problems.py -k "sort_py or vectorsum_py" > "$OUT/conformance.log" 2>&1
timeout 110 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" >> "$OUT/parity.log" 2>&1
cat "$OUT/machine.txt"; grep -A2 "== summary" "$OUT/parity.log"; tail -n 4 "$OUT/conformance.log"
