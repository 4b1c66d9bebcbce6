#!/usr/bin/env bash
# The next session's third call: nvfp4 triton_hopper case 3 timed from inside the
# submission, the public evaluator beside the harness with and without the rehearsal
# (as it is now: fresh inputs written after it), 3 rounds (about 4 min); then what the
# per-file compiler caches save on reruns of the Triton examples (about 2 min).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 330 python $S/diag_probe_case3.py --reference-kernels .refk --rounds 3 --out "$OUT" \
  --harness-config $S/rehearse_off.yaml > "$OUT/probe.log" 2>&1
grep -v "^PROBE" "$OUT/probe.log" | tail -20
for f in vectoradd/add_triton.py mxfp4_mm/triton_dot_scaled.py; do
  t=${f%%/*}
  timeout 150 python benchmarks/compile_rerun.py submissions/$f --task $t --device cuda \
    --runs 3 --out "$OUT/rerun_$t.json" > "$OUT/rerun_$t.log" 2>&1
  tail -n 16 "$OUT/rerun_$t.log"
done
