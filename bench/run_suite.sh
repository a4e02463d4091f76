#!/usr/bin/env bash
# The whole benchmark suite in one command (`make bench`, `make bench-quick`):
#   bash bench/run_suite.sh BUILD_DIR [--quick]
# Full: bench/results/<UTC date>-<N>core.json + .txt (sinew-bench --all) and,
# when sinew-bench-starpu was built, <date>-<N>core-starpu.json + .txt; then
# the PNG plots of both into docs/img/ (bench/plot.py; skipped with a warning
# when matplotlib is missing). --quick: smaller sizes, 5 repetitions, into
# bench/results/quick-<N>core*.json/.txt (not plotted: numbers for a smoke
# check, not for the report). Exit status: the first failing benchmark run's.
set -uo pipefail
build=${1:?usage: bench/run_suite.sh BUILD_DIR [--quick]}
quick=${2:-}
if [[ -n "$quick" && "$quick" != --quick ]]; then
  echo "run_suite.sh: unknown option '$quick' (only --quick)" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
bench=$build/bench/sinew-bench
if [[ ! -x "$bench" ]]; then
  echo "run_suite.sh: $bench not found (build it: cmake --build $build --target sinew-bench)" >&2
  exit 2
fi
mkdir -p bench/results
if [[ -n "$quick" ]]; then
  out=bench/results/quick-$(nproc)core
else
  out=bench/results/$(date -u +%F)-$(nproc)core
fi
rc=0
run() {  # run OUT_STEM EXECUTABLE ARGS...: text to the terminal and OUT_STEM.txt, JSON to OUT_STEM.json
  local stem=$1 exe=$2
  shift 2
  "$exe" "$@" $quick --json "$stem.json" 2>&1 | tee "$stem.txt"
  local r=${PIPESTATUS[0]}
  [[ $r -ne 0 && $rc -eq 0 ]] && rc=$r
  echo "run_suite.sh: wrote $stem.json and $stem.txt (exit $r)"
}
run "$out" "$bench" --all
jsons=("$out.json")
if [[ -x $build/bench/sinew-bench-starpu ]]; then
  run "$out-starpu" "$build/bench/sinew-bench-starpu" starpu_series starpu_saxpy
  jsons+=("$out-starpu.json")
else
  echo "run_suite.sh: no $build/bench/sinew-bench-starpu (StarPU not found at configure time): StarPU peer skipped"
fi
if [[ -z "$quick" ]]; then
  py=${PYTHON:-python3}
  # pyenv's python3 often lacks matplotlib where Debian's has it.
  if ! "$py" -c 'import matplotlib' 2>/dev/null && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    py=/usr/bin/python3
  fi
  "$py" bench/plot.py "${jsons[@]}" || echo "run_suite.sh: WARNING: plots not made (see above)" >&2
fi
exit $rc
