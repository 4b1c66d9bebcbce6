#!/usr/bin/env bash
# Where the late rehearsal's honest flag comes from (one H200, alone; about 2 min). Run 89
# (next25.sh): with timing.rehearse_late the probes' gap (judge round trip minus reported
# time) exceeded the calibration no-ops' by 40-170 µs on vectoradd (flagged case 0 of one
# parity run, case 2 of test_gpu's honest run). The worker now reports pre_ns (request to
# its clock: unmasking, flush, refresh) and lead_ns (to the start event), and each case
# keeps the no-ops' account beside the probes'. says_table.py prints both per case.
# add_torch.py 3 times with late.yaml and once with the defaults; add_triton.py once late.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1 HARNESS_DB=/tmp/diag.db
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
sub() { timeout 100 python runner.py submit "$1" --task vectoradd --mode benchmark \
  ${3:+--config "$3"} --json "$OUT/$2.json" > /dev/null 2>> "$OUT/errors.log"; }
for i in 1 2 3; do sub submissions/vectoradd/add_torch.py late_torch_$i $S/late.yaml; done
sub submissions/vectoradd/add_torch.py default_torch
sub submissions/vectoradd/add_triton.py late_triton $S/late.yaml
python $S/says_table.py "$OUT"/*.json > "$OUT/says.txt" 2>&1; cat "$OUT/says.txt"
