#!/usr/bin/env bash
# Sourced by the scripts from next49.sh on: `machine_txt FILE` writes what ran where (the
# date, the host's CPUs, and a digest of the product's code, since the device's copy of
# the tree reports a stale git HEAD).
machine_txt() {
  { date -u; nproc; lscpu | grep -i "model name"
    echo "code digest $(find harness tasks configs runner.py -type f ! -path '*__pycache__*' \
      | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"; } > "$1" 2>&1
}
