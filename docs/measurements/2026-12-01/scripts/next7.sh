#!/usr/bin/env bash
# The worker's host work on triton_hopper's case 3 is 40% slower than the public
# evaluator's (next6.sh): are OpenMP threads spinning after the judge's and the worker's
# parallel CPU copies (inputs written, private CPU copies refreshed) the cause? The
# probe, 2 rounds: the harness as is, the judge with OMP_WAIT_POLICY=PASSIVE, and both
# judge and worker with it; then torch_dequant's parity with both passive (2 runs).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu; python -c "import torch; print(torch.__config__.parallel_info())"; ls /opt/torch/.venv/lib/python3.12/site-packages/torch/lib | grep -i omp; } > "$OUT/machine.txt" 2>&1
timeout 260 python $S/diag_probe_case3.py --reference-kernels .refk --rounds 2 --out "$OUT/probe" \
  --variant "judge_passive::OMP_WAIT_POLICY=PASSIVE" \
  --variant "both_passive:$S/omp_pass.yaml:OMP_WAIT_POLICY=PASSIVE" > "$OUT/probe.log" 2>&1
grep -v "^PROBE" "$OUT/probe.log" | tail -12
PARITY_JUDGE_ENV=OMP_WAIT_POLICY=PASSIVE timeout 170 python benchmarks/contest_parity.py \
  --reference-kernels .refk --pairs nvfp4 --only torch --runs 2 --skip-test-mode \
  --harness-config $S/omp_pass.yaml --out "$OUT/torch_passive" > "$OUT/parity_torch_passive.log" 2>&1
grep -v "^   case" "$OUT/parity_torch_passive.log" | tail -n 5
