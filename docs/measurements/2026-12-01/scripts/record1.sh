#!/usr/bin/env bash
# The record under the late rehearsal's default (timing.rehearse_late: true since runs
# 89-92), part 1 of 3 (one H200, alone; carry .refk; about 9.5 min): final1.sh again, which
# runs with the defaults: vectoradd (both examples) and nvfp4_group_gemm (both), 3 runs
# each. record2.sh and record3.sh (final2.sh, final3.sh) do mxfp4_mm; `python
# benchmarks/contest_parity.py --merge` pools the parity.json files. Criterion: the median
# of runs, geomean within 5%, no case beyond 15% outside the public's own range.
exec bash "$(dirname "$0")/final1.sh"
