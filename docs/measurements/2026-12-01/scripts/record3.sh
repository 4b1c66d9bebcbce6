#!/usr/bin/env bash
# The record with the late rehearsal (late.yaml), part 3 of 3 (one H200, alone; carry .refk;
# about 9.5 min): final3.sh again (mxfp4_mm torch_dequant 2 more runs); record1.sh says the
# rest.
PARITY_EXTRA="--harness-config $(dirname "$0")/late.yaml" exec bash "$(dirname "$0")/final3.sh"
