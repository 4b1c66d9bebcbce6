#!/usr/bin/env bash
# The record with the late rehearsal (late.yaml), part 2 of 3 (one H200, alone; carry .refk;
# about 9 min): final2.sh again (mxfp4_mm triton_dot_scaled 3 runs, torch_dequant 1 run);
# record1.sh says the rest.
PARITY_EXTRA="--harness-config $(dirname "$0")/late.yaml" exec bash "$(dirname "$0")/final2.sh"
