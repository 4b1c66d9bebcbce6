#!/usr/bin/env bash
# For the next session's first GPU call (one H200, alone; carry .refk). nvfp4
# triton_hopper's case 3 (host-bound: each call waits for the previous call's table copy)
# read 1.388 and 1.316 under `timing.warm: torch` (runs 49, 52) against 0.925 in run 38
# (`warm: kernel`, another machine). Two suspects, beside the default, three rounds:
#  - warm_kernel: the empty kernel alone before the start event (the default before dd902d8);
#  - env_all: the worker inherits every variable of the device's shell that the allow-list
#    drops (worker.env_pass, cdce0d7), e.g. an allocator or malloc setting the public
#    evaluator's process sees. First, which variables those are (names and values);
#  - and whether the judge's shared arenas slow the calls on the GPU (diag_arena_case3.py).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
W=/tmp/work; mkdir -p "$W"  # the device returns 8 files: the rest goes back as one archive
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
env | sort > "$OUT/env_shell.txt"
timeout 120 python runner.py submit tests/adversarial/read_environment.py --task vectoradd \
  --mode test --json "$OUT/env_worker.json" > "$W/env_worker.log" 2>&1
python - "$OUT" "$S/env_all.yaml" <<'PY' > "$OUT/env_diff.txt" 2>&1
import json, os, sys
out, cfg = sys.argv[1:]
doc = json.load(open(f"{out}/env_worker.json"))
dump = next(l for l in doc["worker_output"]["stdout"].splitlines() if l.startswith("ENV_DUMP"))
worker = {kv.split("=", 1)[0] for kv in dump.split()[1:] if "=" in kv}
skip = ("HARNESS_", "AWS_", "GITHUB_", "PG", "DATABASE", "OUT", "PWD", "OLDPWD", "SHLVL", "_")
import re  # env_pass takes plain names only (harness/settings.py)
missing = sorted(k for k in os.environ if k not in worker and not k.startswith(skip)
                 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k))
for k in missing:
    print(f"{k}={os.environ[k][:200]}")
with open(cfg, "w") as f:
    f.write("worker:\n  env_pass: [" + ", ".join(missing) + "]\n")
PY
cp "$S/env_all.yaml" "$OUT/"
# The inputs as the worker maps them (the judge's arenas) against torch's memory, the
# public way, in one process (scripts/diag_arena_case3.py; not run before).
HARNESS_ROOT=. timeout 150 python $S/diag_arena_case3.py > "$OUT/diag_arena.log" 2>&1
for r in 1 2 3; do
  for c in default warm_kernel env_all; do
    cfg=""; [ $c != default ] && cfg="--harness-config $S/$c.yaml"
    timeout 100 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
      --only triton --runs 1 --skip-test-mode $cfg --out "$W/p_${c}_$r" > "$W/p_${c}_$r.log" 2>&1
    python - "$W/p_${c}_$r/parity.json" "$c" "$r" >> "$OUT/rounds.log" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["pairs"][0]
h, p = d["harness"][0], d["public"][0]
f = lambda xs: " ".join(f"{x / 1e3:6.1f}" for x in xs)
print(f"round {sys.argv[3]} {sys.argv[2]:11s} public {f(p['means_ns'])} | harness {f(h['means_ns'])}"
      f" | host {f(h['host_launch_ns'])} | walls {p['wall_s']:.1f} {h['wall_s']:.1f} s")
PY
  done
done
tar czf "$OUT/rounds.tar.gz" -C "$W" .
cat "$OUT/env_diff.txt" "$OUT/diag_arena.log" "$OUT/rounds.log"
