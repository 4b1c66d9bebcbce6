#!/usr/bin/env bash
# timing.mask_cpu_inputs: false against the default (true), under the late order, the
# harness alone (one H200, alone; about 7.5 min; no carry). Both nvfp4 examples, the two
# settings alternating, 3 runs each; then the GPU tests changed since run 103 (the early
# order's honest vectoradd runs, the scored mailbox hook under both orders, nvfp4 with
# plain CPU inputs). Written before it runs. What it is to show: the benchmark wall and
# its calibration part (the records' late order: triton_hopper 25.1 s, 5.99 s of it
# calibration, against 18.7 and 0.89 early; the public evaluator's 20.2), the per-case
# scores of the two settings side by side (they should not move beyond the runs' own
# spread: the call's inputs are the same bytes, only who writes the CPU-side ones
# differs), and no case flagged. mask_cpu_inputs: false becomes the default only if the
# wall drops below the public evaluator's, the scores do not move, and nothing is flagged;
# it gives the CPU-side inputs the early order's protection, not the late one's (readable
# from the judge's plain writing until the call, as in the early order): the decision is
# to be written down with that said.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/next38.db
S=docs/measurements/2026-12-02/scripts
{ date -u; nproc; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
for i in 1 2 3; do
  for setting in masked plain; do
    extra=""; [ $setting = plain ] && extra="--config $S/cpu_plain.yaml"
    for f in triton_hopper torch_dequant; do
      t0=$(date +%s.%N)
      timeout 120 python runner.py submit submissions/nvfp4_group_gemm/$f.py --task nvfp4_group_gemm \
        --mode benchmark $extra --json "$OUT/nv_${f}_${setting}_$i.json" > /dev/null 2>> "$OUT/log.txt"
      echo "$(date +%s.%N) $t0" | awk '{printf "%.1f s wall\n", $1 - $2}' > "$OUT/time_${f}_${setting}_$i.txt"
    done
  done
done
python - "$OUT" >> "$OUT/log.txt" 2>&1 <<'PY'
import glob, json, math, os, sys
out = sys.argv[1]
for path in sorted(glob.glob(f"{out}/nv_*.json")):
    doc = json.load(open(path)); phase = doc["phases"][0]; cases = phase["cases"]
    name = os.path.basename(path)[len("nv_"):-len(".json")]
    wall = open(f"{out}/time_{name}.txt").read().split()[0]
    if any(c.get("score_ns") is None for c in cases):
        print(f"{os.path.basename(path)}: a case without a score: "
              + ", ".join(f"{c['index']} {c['status']}" for c in cases))
        continue
    calib = sum(c["wall_parts"].get("calibration", 0) for c in cases)
    timing = sum(c["wall_parts"].get("timing", 0) for c in cases)
    geo = math.exp(sum(math.log(c["score_ns"]) for c in cases) / len(cases)) / 1e3
    print(f"{os.path.basename(path)}: wall {wall} s, document {doc['wall_seconds']:.1f} s, "
          f"calibration {calib:.2f} s, timing {timing:.2f} s, geomean {geo:.1f} us, cases "
          + " ".join(f"{c['score_ns'] / 1e3:.1f}" for c in cases)
          + f", flags {sum(len(c['flags']) for c in cases)}")
PY
tar -czf "$OUT/nv_json.tgz" -C "$OUT" $(cd "$OUT" && ls nv_*.json time_*.txt) && rm -f "$OUT"/nv_*.json "$OUT"/time_*.txt
timeout 240 python -m pytest -q -rs tests/test_gpu.py tests/test_adversarial.py \
  -k "benchmark_mode_uses_events or mailbox or (late_rehearsal and triton_hopper)" >> "$OUT/tests.log" 2>&1
echo "tests rc $?" >> "$OUT/tests.log"; grep -E "nv_|passed|failed|rc " "$OUT/log.txt" "$OUT/tests.log" | tail -n 20
