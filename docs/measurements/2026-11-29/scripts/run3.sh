#!/usr/bin/env bash
# GPU session part 1: GPU tests, benchmark-mode numbers for the examples, fidelity.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/json"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
python benchmarks/ceilings.py > "$OUT/ceilings.json"; cat "$OUT/ceilings.json"
timeout 240 python -m pytest -q -x tests/test_gpu.py tests/test_adversarial.py -k "gpu or event_timer or side_stream or examples or cuda or compile or seed or benchmark_mode" 2>&1 | tail -15
for f in vectoradd/add_torch vectoradd/add_triton mxfp4_mm/triton_dot_scaled mxfp4_mm/torch_dequant nvfp4_group_gemm/torch_dequant; do
  n=$(echo $f | tr / _)
  timeout 120 python runner.py submit submissions/$f.py --mode benchmark --json "$OUT/json/$n.json" > "$OUT/json/$n.txt" 2>&1
  python - "$OUT/json/$n.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(sys.argv[1].split("/")[-1], d["status"], "score_us", round((d["score_ns"] or 0) / 1e3, 2), "cal", round(d["calibration"]["median_ns"] / 1e3, 1))
for c in d["phases"][0]["cases"]:
    s, i = c["stats"] or {}, c["integrity"]
    print(f"   #{c['index']} {c['status']} calls={s.get('calls')} mean={s.get('mean',0)/1e3:.2f} std={s.get('std',0)/1e3:.2f} "
          f"sol={i.get('speed_of_light_fraction')} gap={i.get('clocks',{}).get('gap_median_ns',0)/1e3:.1f} flags={c['flags']} ws={i.get('worker_says')}")
PY
done
timeout 300 python benchmarks/fidelity.py --out "$OUT/fid" --skip-leaderboard 2>&1 | grep -v "^\s*$"
cp "$OUT/fid/fidelity.json" "$OUT/fidelity.json" 2>/dev/null
tar czf "$OUT/results.tgz" -C "$OUT" json && rm -rf "$OUT/json" "$OUT/fid"
