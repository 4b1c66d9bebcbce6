#!/usr/bin/env bash
# (one H200, alone; about 2.5 min; no carry) Written before it runs; it changes nothing.
# 1. The GPU tests of tests/test_sampling.py and tests/test_masking.py after their fix (two
#    late-order tests unmasked CPU tensors with SHAKE-256 where the judge, on a GPU machine,
#    draws on the GPU: they failed on the H200 in run 111 whatever the buffer).
# 2. Where the judge's time goes in nvfp4 triton_hopper's benchmark run (run 113: case 0
#    7.6-12.0 s of walls 22.3-32.2 s, against the public evaluator's 22.1-24.0): the judge
#    under cProfile, its 45 largest cumulative entries and 30 largest own times. Profiling
#    slows Python-heavy parts; the shares, not the seconds, are the reading.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"
  echo "code digest $(find harness tasks configs runner.py -type f ! -path '*__pycache__*' \
    | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"; } > "$OUT/machine.txt" 2>&1
timeout 150 python -m pytest -q -rs tests/test_sampling.py tests/test_masking.py > "$OUT/tests.log" 2>&1
echo "tests rc $?" >> "$OUT/tests.log"; tail -n 4 "$OUT/tests.log"
s=$(date +%s.%N)
timeout 200 python -m cProfile -o "$OUT/judge.prof" runner.py submit \
  submissions/nvfp4_group_gemm/triton_hopper.py --task nvfp4_group_gemm --mode benchmark \
  --no-record --json "$OUT/triton_hopper.json" > "$OUT/submit.log" 2>&1
echo "submit rc $? wall $(python -c "import time;print(round(time.time()-$s,1))") s" | tee "$OUT/profile.txt"
python - "$OUT/judge.prof" >> "$OUT/profile.txt" <<'PY'
import pstats, sys
st = pstats.Stats(sys.argv[1])
st.sort_stats("cumulative").print_stats(45)
st.sort_stats("tottime").print_stats(30)
PY
head -c 9000 "$OUT/profile.txt" | tail -c 7000
