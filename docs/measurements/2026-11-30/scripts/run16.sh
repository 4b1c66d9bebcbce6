#!/usr/bin/env bash
# Session 2026-11-30, GPU call 3 (the last of the session's device time): which part of
# the worker's sandbox stops CUDA (run 15 saw "cudaGetDeviceCount ... Error 304"), first
# in isolation, then through the harness with each part turned off by a settings file.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
D=docs/measurements/2026-11-30/scripts
timeout 75 python $D/diag_sandbox.py > "$OUT/diag.log" 2>&1
for cfg in default keep_caps no_seccomp landlock_only sandbox_off; do
  extra=""; [ "$cfg" = default ] || extra="--config $D/$cfg.yaml"
  echo "=== $cfg" >> "$OUT/harness.log"
  timeout 25 python runner.py submit submissions/vectoradd/add_triton.py --mode test \
    --device cuda --no-record $extra --json "$OUT/$cfg.json" > "$OUT/$cfg.txt" 2>&1
  echo "rc=$?" >> "$OUT/harness.log"; grep -E "PASSED|FAILED|CRASHED|could not start|containment|refused" \
    "$OUT/$cfg.txt" | head -5 >> "$OUT/harness.log"
done
cat "$OUT/diag.log" "$OUT/harness.log"
