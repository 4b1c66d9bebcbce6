#!/usr/bin/env bash
# mxfp4_mm torch_dequant under the late rehearsal against the public evaluator, 2 runs
# (one H200, alone; carry .refk; about 9 min): record3.sh again at this commit. Runs 96 and
# 98 read 1.363 and 1.130 (the record at f1db89c); run 100 (next34.sh) found no cost of
# the late order on this host-bound example standalone (medians of 3 runs: 844 µs late,
# 918 default; runs 742-1262). Read: these two runs' ratios alone, and pooled with runs 96
# and 98 (`contest_parity.py --merge`, the median of four runs). The late rehearsal
# becomes a candidate default only if the pooled four meet the criterion (geomean within
# 5%, no case beyond 15% outside the public's own range); otherwise it stays a setting.
exec bash "$(dirname "$0")/../../2026-12-01/scripts/record3.sh"
