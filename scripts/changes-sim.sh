#!/usr/bin/env bash
# The rates of `sysperf changes` (src/changepoint.rs) on simulated histories of 50 runs fitted
# to this VM's run-to-run noise: false alarms in 1,000 A/A histories and detections of planted
# 3%, 10% and 30% steps per noise profile, then the first split's test on ranks against on log
# times. Pure computation (no clock is read, nothing is measured on the machine), a minute or
# two of one CPU in a release build. docs/changes.md quotes its output.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --lib changepoint::tests:: -- --ignored --nocapture --test-threads 1 2>&1 |
  sed -n 's/^test changepoint::tests::[a-z_]* \.\.\. //; /^running\|^$\|^ok$\|test result\|^test /d; p'
