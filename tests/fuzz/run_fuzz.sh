#!/usr/bin/env bash
# Runs every libFuzzer harness in BIN_DIR for SECONDS each, starting from the
# committed corpus (new inputs go to a scratch copy; crashes to ARTIFACTS).
#   usage: tests/fuzz/run_fuzz.sh BIN_DIR SECONDS [ARTIFACTS]
set -euo pipefail
bin=$1
secs=$2
art=${3:-fuzz-artifacts}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$art"
status=0
for h in "$bin"/fuzz_*; do
  name=$(basename "$h")
  short=${name#fuzz_}
  scratch=$(mktemp -d)
  echo "== $name: $secs s"
  if ! "$h" "$scratch" "$src/corpus/$short" -max_total_time="$secs" -max_len=65536 -timeout=20 \
        -artifact_prefix="$art/$short-" -print_final_stats=1 2>"$art/$short.log"; then
    echo "FINDING in $name: see $art/$short.log and $art/$short-*"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added" "$art/$short.log" || true
  rm -rf "$scratch"
done
exit $status
