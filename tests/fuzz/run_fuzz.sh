#!/usr/bin/env bash
# Runs every libFuzzer harness in BIN_DIR for SECONDS each, starting from the
# committed corpus (new inputs go to a scratch copy; crashes to ARTIFACTS).
# Each harness's output goes to LOGS/fuzz-<harness>.log (default: ARTIFACTS),
# which starts with its command, date and the build's commit (bench/logged.sh;
# `make fuzz` gives bench/results/<N>core/).
#   usage: tests/fuzz/run_fuzz.sh BIN_DIR SECONDS [ARTIFACTS] [LOGS]
set -euo pipefail
bin=$1
secs=$2
art=${3:-fuzz-artifacts}
logs=${4:-$art}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$art" "$logs"
status=0
for h in "$bin"/fuzz_*; do
  name=$(basename "$h")
  short=${name#fuzz_}
  scratch=$(mktemp -d)
  log=$logs/fuzz-$short.log
  echo "== $name: $secs s"
  if ! bash "$src/../../bench/logged.sh" -q "$(dirname "$bin")" "$log" "$h" "$scratch" "$src/corpus/$short" \
        -max_total_time="$secs" -max_len=65536 -timeout=20 -artifact_prefix="$art/$short-" -print_final_stats=1; then
    echo "FINDING in $name: see $log and $art/$short-*"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added" "$log" || true
  rm -rf "$scratch"
done
exit $status
