#!/usr/bin/env bash
# Run 39 (one H200, alone; carry .refk). Run 38 (next.sh, this session's first call) read
# vectoradd torch 1.197 with the worker's host time around the call at 39 µs in one run
# and 70-87 µs in the next two (cases 0 and 1 then 1.9x and 1.3x). Where does the
# worker's host time go? A bare process timed the public way (alone, and beside a
# spinner on its SMT sibling or on another core), then the harness with its defaults,
# with no sandbox at all, and with napping instead of polling, alternating.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
{ date -u; nproc; lscpu; } > "$OUT/machine.txt" 2>&1
timeout 120 python $S/diag_host_vectoradd.py .refk/problems/pmpp_v2/vectoradd_py > "$OUT/bare.log" 2>&1
for r in 1 2; do
  for c in default sandbox_off_full judge_naps; do
    cfg=""; [ $c != default ] && cfg="--harness-config $S/$c.yaml"
    timeout 100 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
      --only submission.py --runs 1 --skip-test-mode $cfg --out "/tmp/p_${c}_$r" > /tmp/p_${c}_$r.log 2>&1
    python - "/tmp/p_${c}_$r/parity.json" "$c" "$r" >> "$OUT/harness.log" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["pairs"][0]
h, p = d["harness"][0], d["public"][0]
f = lambda xs: " ".join(f"{x / 1e3:6.1f}" for x in xs)
print(f"round {sys.argv[3]} {sys.argv[2]:17s} public {f(p['means_ns'])} | harness {f(h['means_ns'])}"
      f" | host {f(h['host_launch_ns'])} | rt {h['roundtrip_median_ns'] / 1e3:.0f}")
PY
  done
done
cat "$OUT/bare.log" "$OUT/harness.log"
