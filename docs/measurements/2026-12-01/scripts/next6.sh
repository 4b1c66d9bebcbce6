#!/usr/bin/env bash
# nvfp4 torch_dequant read 1.229 in next1.sh (its scored samples with the 20 ms GPU sleep
# read about 16 ms a sample more than its probes): the harness with nothing hidden
# (counted.yaml) and without the rehearsal (rehearse_off.yaml), 2 runs each beside the
# public evaluator; then triton_hopper's case 3 probe, rehearsal on and off, 2 rounds.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; uname -r; nvidia-smi -q -d CLOCK,PERFORMANCE | head -60; } > "$OUT/machine.txt" 2>&1
for v in counted rehearse_off; do
  timeout 150 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
    --only torch --runs 2 --skip-test-mode --harness-config $S/$v.yaml \
    --out "$OUT/torch_$v" > "$OUT/parity_torch_$v.log" 2>&1
  grep -v "^   case" "$OUT/parity_torch_$v.log" | tail -n 5
done
timeout 220 python $S/diag_probe_case3.py --reference-kernels .refk --rounds 2 --out "$OUT/probe" \
  --harness-config $S/rehearse_off.yaml > "$OUT/probe.log" 2>&1
grep -v "^PROBE" "$OUT/probe.log" | tail -20
cd "$OUT" && tar czf raw.tgz torch_counted torch_rehearse_off probe 2>/dev/null
