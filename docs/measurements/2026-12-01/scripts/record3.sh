#!/usr/bin/env bash
# The record under the late rehearsal's default, part 3 of 3 (one H200, alone; carry .refk;
# about 9.5 min): final3.sh again (mxfp4_mm torch_dequant 2 more runs); record1.sh says the
# rest.
exec bash "$(dirname "$0")/final3.sh"
