#!/usr/bin/env bash
# Session of 2026-12-01 (2), second call (one H200, alone; carry .refk), about 8 min.
# next9.sh's probe lost its bursts (os has no sched_getcpu; fixed with libc's). The case-3
# probe again, 3 rounds, default and judge napping; then nvfp4 Triton parity with the
# judge napping (judge_naps_only.yaml), 3 runs each.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
grep '^cpu' /proc/stat > "$OUT/stat_before_probe.txt"
timeout 250 python $S/diag_probe_case3.py --reference-kernels .refk --rounds 3 --out "$OUT/probe" \
  --harness-config $S/judge_naps_only.yaml > "$OUT/probe.log" 2>&1
grep '^cpu' /proc/stat > "$OUT/stat_after_probe.txt"
grep -v "^PROBE" "$OUT/probe.log" | tail -24
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --harness-config $S/judge_naps_only.yaml \
  --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 12
cd "$OUT" && tar czf raw.tgz probe nvfp4_triton stat_*.txt
