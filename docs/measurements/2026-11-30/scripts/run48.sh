#!/usr/bin/env bash
# Run 48 (one H200, alone; carry .refk): timing.warm torch (a torch allocation and fill
# before every sample's start event, as the public flush) against the default (an empty
# kernel), vectoradd's torch submission, beside the public evaluator, three rounds.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
for r in 1 2 3; do
  for c in default warm_torch; do
    cfg=""; [ $c != default ] && cfg="--harness-config $S/$c.yaml"
    timeout 80 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
      --only submission.py --runs 1 --skip-test-mode $cfg --out "/tmp/p_${c}_$r" > /tmp/p_${c}_$r.log 2>&1
    python - "/tmp/p_${c}_$r/parity.json" "$c" "$r" >> "$OUT/warm.log" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["pairs"][0]
h, p = d["harness"][0], d["public"][0]
f = lambda xs: " ".join(f"{x / 1e3:6.1f}" for x in xs)
print(f"round {sys.argv[3]} {sys.argv[2]:10s} public {f(p['means_ns'])} | harness {f(h['means_ns'])}"
      f" | host {f(h['host_launch_ns'])} | walls {p['wall_s']:.1f} {h['wall_s']:.1f} s")
PY
  done
done
cat "$OUT/warm.log"
