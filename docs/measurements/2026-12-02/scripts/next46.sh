#!/usr/bin/env bash
# The GPU tests and the corpus's GPU attacks with the masking's kept page-locked buffer
# (HostStream, every GPU run's late order goes through it), as next37.sh ran them, plus the
# sharing tests (one H200, alone; about 5.5 min; no carry). Written before it runs: all pass.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/next46.db
{ date -u; nproc
  echo "code digest $(find harness tasks configs runner.py -type f ! -path '*__pycache__*' \
    | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"; } > "$OUT/machine.txt" 2>&1
timeout 330 python -m pytest -v -rs tests/test_gpu.py tests/test_adversarial.py tests/test_sharing.py \
  -k "gpu or mailbox or patched_event or side_stream or slack_of_a_long_sleep" > "$OUT/tests.log" 2>&1
echo "tests rc $?" >> "$OUT/tests.log"; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|rc " "$OUT/tests.log" | tail -n 45
