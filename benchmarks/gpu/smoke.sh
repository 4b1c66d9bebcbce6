#!/usr/bin/env bash
# Run the harness end to end on the GPU machine: every example submission in test and
# benchmark modes, the bad-submission verdicts, and the two seed files. Logs go to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/json"
SEEDS=${SEEDS:-../shared/seeds}; [ -d "$SEEDS" ] || SEEDS=.shared/seeds
export PYTHONUNBUFFERED=1
log() { echo "=== $*"; }
run() {  # name, args...
  local name=$1; shift
  log "$name: $*"
  local t0=$(date +%s.%N)
  timeout 300 python runner.py submit "$@" --json "$OUT/json/$name.json" > "$OUT/json/$name.txt" 2>&1
  local rc=$?
  python - "$OUT/json/$name.json" "$rc" "$t0" <<'PY'
import json, sys, time
path, rc, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:
    d = json.load(open(path))
except Exception as exc:
    print(f"  rc={rc} no json ({exc})"); sys.exit()
le = d.get("load_error") or {}
print(f"  rc={rc} status={d['status']} wall={time.time()-t0:.1f}s score={d.get('score_ns')} {le.get('title','')}")
for p in d["phases"]:
    for c in p["cases"]:
        s = c.get("stats") or {}
        msg = (c["message"] or "").replace("\n", " | ")[:220]
        flags = "; ".join(c.get("flags", []))[:200]
        print(f"  {p['name'][:5]} {p['seeds'][:3]} #{c['index']} {c['status']:<10} calls={s.get('calls','-')} "
              f"mean={s.get('mean', 0)/1e3:.2f}us std={s.get('std', 0)/1e3:.2f} {msg} {flags}")
        clocks = (c.get("integrity") or {}).get("clocks")
        if clocks:
            print(f"      gap={clocks['gap_median_ns']/1e3:.1f}us expected={clocks['expected_gap_ns']/1e3:.1f}us "
                  f"judge={clocks['judge_mean_ns']/1e3:.2f}us sol={c['integrity'].get('speed_of_light_fraction')}")
print("  calibration", d.get("calibration"))
PY
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv
python -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
python benchmarks/ceilings.py | tee "$OUT/ceilings.json"

run va_torch_test submissions/vectoradd/add_torch.py --mode test
run va_torch_bench submissions/vectoradd/add_torch.py --mode benchmark
run va_triton_bench submissions/vectoradd/add_triton.py --mode benchmark
for bad in cuda_oob compile_fail raises wrong_values returns_nan abort exit_zero segfault import_aiter; do
  run bad_$bad tests/submissions/vectoradd/$bad.py --task vectoradd --mode test --timeout 60
done
run bad_hang tests/submissions/vectoradd/hang.py --task vectoradd --mode test --timeout 10
run nv_torch_test submissions/nvfp4_group_gemm/torch_dequant.py --mode test
run nv_triton_test submissions/nvfp4_group_gemm/triton_hopper.py --mode test
run nv_triton_bench submissions/nvfp4_group_gemm/triton_hopper.py --mode benchmark
run nv_seed $SEEDS/nvfp4_group_gemm_dot_scaled.py --task nvfp4_group_gemm --mode test
run mx_torch_test submissions/mxfp4_mm/torch_dequant.py --mode test
run mx_triton_test submissions/mxfp4_mm/triton_dot_scaled.py --mode test
run mx_triton_bench submissions/mxfp4_mm/triton_dot_scaled.py --mode benchmark
run mx_seed $SEEDS/mxfp4_mm_fused_quant_aiter.py --task mxfp4_mm --mode test
run nv_torch_bench submissions/nvfp4_group_gemm/torch_dequant.py --mode benchmark
run mx_torch_bench submissions/mxfp4_mm/torch_dequant.py --mode benchmark
tar czf "$OUT/results.tgz" -C "$OUT" json && rm -rf "$OUT/json"
