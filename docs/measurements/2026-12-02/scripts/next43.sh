#!/usr/bin/env bash
# Where vectoradd's benchmark wall goes, the harness beside the public evaluator (one H200,
# alone; carry .refk; about 3 min). Runs 107 and 110: the harness's process 13.3-13.9 s
# against the public evaluator's 11.6-12.1, of which the document's evaluation 8.5-9.3 s
# and 4.4-6.1 s outside it. Written before it runs; it changes nothing, it measures:
# 1. contest_parity.py on the public vectoradd_py with its submission.py, 3 runs a side,
#    now with the harness's `before_s` (the process's age when the evaluation began).
# 2. One run a side with PYTHONPROFILEIMPORTTIME=1: each process's imports (the judge's
#    stderr; the public evaluator's output), to set the torch and torch._inductor imports
#    of both beside each other.
# 3. The floor: `import torch` + a CUDA context, and `import torch._inductor.config`, in
#    bare processes, 3 each.
# The reading: the harness's wall less the public's, split into before (process start to
# the evaluation), start-up, phase and after (wall less before less document); the part
# that is not also in the public process is what a remedy can take.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; env | grep -i pythondont; } \
  > "$OUT/machine.txt" 2>&1
W=$(mktemp -d)
timeout 300 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --only submission.py --runs 3 --skip-test-mode --out "$W/parity" > "$OUT/parity.log" 2>&1
echo "parity rc $?" >> "$OUT/parity.log"; tail -n 3 "$OUT/parity.log"
cp "$W/parity/parity.json" "$OUT/parity.json"
python - "$W" "$OUT" <<'PY'
import os, sys, subprocess, time, json
from pathlib import Path
sys.path.insert(0, ".")
from harness.loading.task_folder import load_task
from harness.loading.popcorn import stage_all, run_eval
w, out = Path(sys.argv[1]), Path(sys.argv[2])
folder = Path(".refk/problems/pmpp_v2/vectoradd_py")
task = load_task(str(folder))
staged = stage_all(task, folder / "submission.py", w / "pub")
env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
run = run_eval(staged, "benchmark", task.benchmarks, timeout=200, env=env)
(out / "public_imports.txt").write_text(run.output)
print("public importtime run: passed", run.passed, "wall", round(run.wall_seconds, 2))
t0 = time.monotonic()
p = subprocess.run([sys.executable, "runner.py", "submit", str(folder / "submission.py"), "--task",
                    str(folder), "--mode", "benchmark", "--no-record", "--json", str(w / "h.json")],
                   env=env, capture_output=True, text=True)
wall = time.monotonic() - t0
(out / "harness_imports.txt").write_text(p.stderr)
d = json.loads((w / "h.json").read_text())
print("harness importtime run: rc", p.returncode, "wall", round(wall, 2), "document",
      round(d["wall_seconds"], 2), "before", d["harness"].get("process_age_s"), "startup",
      round(d["startup_seconds"], 2))
PY
for i in 1 2 3; do
  for code in "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()" \
              "import torch; import torch._inductor.config"; do
    s=$(date +%s.%N); python -c "$code"
    echo "bare: $code: $(python -c "import time;print(round(time.time()-$s,2))") s" | tee -a "$OUT/bare.txt"
  done
done
