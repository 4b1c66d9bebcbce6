#!/usr/bin/env bash
# For the next session's first call (one H200, alone; carry .refk), about 6 min.
# The worker's host work on nvfp4 triton_hopper case 3 read 69-128 µs a call, one level
# per evaluation, against 61-75 µs in every public run (runs 59, 60, 63): is it the CPU
# the worker lands on? A map of every CPU's speed for that host work, the machine's
# interrupts and steal time per CPU, then the case-3 probe (now with the CPU of each burst) for 3 rounds,
# the judge napping (judge_naps_only.yaml; run 63 read it at 78.9 against 127.6 µs in one
# round) beside the default.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu; uname -r; cat /proc/interrupts; } > "$OUT/machine.txt" 2>&1
timeout 90 python $S/cpu_map.py > "$OUT/cpu_map.log" 2>&1; cat "$OUT/cpu_map.log"
grep '^cpu' /proc/stat > "$OUT/stat_before_probe.txt"
timeout 330 python $S/diag_probe_case3.py --reference-kernels .refk --rounds 3 --out "$OUT/probe" \
  --harness-config $S/judge_naps_only.yaml > "$OUT/probe.log" 2>&1
grep '^cpu' /proc/stat > "$OUT/stat_after_probe.txt"
grep -v "^PROBE" "$OUT/probe.log" | tail -24
paste "$OUT/stat_before_probe.txt" "$OUT/stat_after_probe.txt" | awk '{print $1, "steal", $20 - $9}'
cd "$OUT" && tar czf raw.tgz probe stat_*.txt
