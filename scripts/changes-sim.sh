#!/usr/bin/env bash
# The rates of `sysperf changes` (src/changepoint.rs) on simulated histories of 50 runs fitted
# to this VM's run-to-run noise: first the first split's test on log times against on ranks
# (false alarms in 1,000 A/A histories, a 10% step found in 200, per profile), then the whole
# detector's false alarms in 1,000 A/A histories and detections of planted 3%, 10% and 30% steps
# in 200 each, per noise profile. Pure computation (no clock is read, nothing is measured on
# the machine): seconds of one CPU once the release build is made (that takes minutes; a debug
# build runs it in about two). docs/changes.md quotes its output.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --lib changepoint::tests:: -- --ignored --nocapture --test-threads 1 2>&1 |
  sed -n 's/^test changepoint::tests::[a-z_]* \.\.\. //; /^running\|^$\|^ok$\|test result\|^test /d; p'
