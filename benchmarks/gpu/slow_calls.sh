#!/usr/bin/env bash
# Where the slow calls and the large-case gap come from (docs/benchmarks.md, "Slow calls
# on the H100"), in one device call of about six minutes: the shared buffers and the
# protocol in one process, then each vectoradd pair traced beside the public loop in its
# own process and inside the harness's worker, with the sequences before a call timed in
# the worker on the same inputs every call, then with the sandbox off. Needs the public
# vectoradd_py folder at .refk (a local copy of gpu-mode/reference-kernels). Logs to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
V=.refk/problems/pmpp_v2/vectoradd_py
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv
timeout 150 python benchmarks/shared_buffers.py --out "$OUT/shared_buffers.json"
for s in torch triton; do
  f=$V/submission.py; [ $s = triton ] && f=$V/solutions/correct/submission_triton.py
  timeout 200 python benchmarks/call_trace.py $f --task $V --public-loop --worker-loop \
    --worker-sequences --runs 2 --out "$OUT/trace_$s"
done
printf 'worker:\n  sandbox: "off"\n' > "$OUT/sandbox_off.yaml"
timeout 90 python benchmarks/call_trace.py $V/submission.py --task $V --worker-loop --runs 2 \
  --harness-config "$OUT/sandbox_off.yaml" --out "$OUT/trace_torch_sandbox_off" | head -30
rm -f "$OUT"/trace_*/harness*.json "$OUT"/trace_*/worker_loop*.json "$OUT"/trace_*/sequences?.json
