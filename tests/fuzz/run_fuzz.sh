#!/usr/bin/env bash
# Runs every libFuzzer harness in BIN_DIR for SECONDS each, starting from the
# committed corpus (new inputs go to a scratch copy; crashes to ARTIFACTS),
# up to $FUZZ_JOBS harnesses at once (default 1; `make fuzz` passes nproc).
# Each harness's output goes to LOGS/fuzz-<harness>.log (default: ARTIFACTS),
# which starts with its command, date and the build's commit (bench/logged.sh;
# `make fuzz` gives bench/results/<N>core/).
#   usage: [FUZZ_JOBS=N] tests/fuzz/run_fuzz.sh BIN_DIR SECONDS [ARTIFACTS] [LOGS]
set -euo pipefail
bin=$1
secs=$2
art=${3:-fuzz-artifacts}
logs=${4:-$art}
jobs=${FUZZ_JOBS:-1}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$art" "$logs"

# One harness: its log, then a line saying whether it found something.
fuzz_one() {
  local h=$1 name short scratch log
  name=$(basename "$h")
  short=${name#fuzz_}
  scratch=$(mktemp -d)
  log=$logs/fuzz-$short.log
  local rc=0
  bash "$src/../../bench/logged.sh" -q "$(dirname "$bin")" "$log" "$h" "$scratch" "$src/corpus/$short" \
    -max_total_time="$secs" -max_len=65536 -timeout=20 -artifact_prefix="$art/$short-" -print_final_stats=1 || rc=1
  rm -rf "$scratch"
  if [[ $rc -ne 0 ]]; then
    echo "== $name: FINDING, see $log and $art/$short-*"
  else
    echo "== $name: $secs s, $(grep -hoE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$') runs, no finding"
  fi
  return $rc
}

# Each harness leaves its exit status in a file: wait -n's own status would
# lose those of harnesses that ended while another was awaited.
rcdir=$(mktemp -d)
for h in "$bin"/fuzz_*; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  { rc=0; fuzz_one "$h" || rc=$?; echo $rc > "$rcdir/$(basename "$h")"; } &
done
wait
status=0
for h in "$bin"/fuzz_*; do
  [[ $(cat "$rcdir/$(basename "$h")" 2>/dev/null) == 0 ]] || status=1
done
rm -rf "$rcdir"
exit $status
