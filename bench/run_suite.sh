#!/usr/bin/env bash
# The whole benchmark suite in one command (`make bench`, `make bench-quick`):
#   bash bench/run_suite.sh BUILD_DIR [--quick]
# Full: every benchmark of the build into bench/results/<N>core/ (N = nproc: 2core
# is the development VM), one process per file, each as .json + .txt:
#   e2e-workloads       stream_triad peak_flops map_saxpy workloads nbody (one process:
#                       workloads uses the triad measured before it, nbody the peak)
#   e2e-workloads_gpu   workloads_gpu (a process of its own: a GPU context slows OpenMP)
#   e2e-image_pipeline, e2e-farm_grain, e2e-queue (queue_handoff)
#   e2e-starpu          sinew-bench-starpu starpu_series starpu_saxpy, when it was built
#   <name>              every other benchmark of `sinew-bench --list`
# The run REPLACES the machine's previous one: each file is rewritten, its line in
# runs.tsv (file, UTC date, build commit, command; bench/runs_tsv.sh) replaced, and
# the .json/.txt results that this run did not write (an earlier layout, a
# benchmark since removed) are deleted (git history keeps them); files of other
# commands (mpi-scaling.txt, soak-600s.txt) stay. Then the PNG plots into docs/img/
# (bench/plot.py; skipped with a warning when matplotlib is missing).
# --quick: smaller sizes, 5 repetitions, into bench/results/quick-<N>core/
# (git-ignored, not plotted: a smoke check, not for the report).
# Exit status: the first failing benchmark run's.
set -uo pipefail
build=${1:?usage: bench/run_suite.sh BUILD_DIR [--quick]}
quick=${2:-}
if [[ -n "$quick" && "$quick" != --quick ]]; then
  echo "run_suite.sh: unknown option '$quick' (only --quick)" >&2
  exit 2
fi
cd "$(dirname "$0")/.." || exit 2
source bench/runs_tsv.sh
bench=$build/bench/sinew-bench
if [[ ! -x "$bench" ]]; then
  echo "run_suite.sh: $bench not found (build it: cmake --build $build --target sinew-bench)" >&2
  exit 2
fi
out=bench/results/${quick:+quick-}$(nproc)core
mkdir -p "$out"
BUILD_COMMIT=$("$build/tools/sinew" --version 2>/dev/null | sed -n 's/.*(\(.*\))$/\1/p')
rc=0
written=()
run() {  # run STEM EXECUTABLE ARGS...: text to the terminal and $out/STEM.txt, JSON to $out/STEM.json
  local stem=$1 exe=$2
  shift 2
  "$exe" "$@" $quick --json "$out/$stem.json" 2>&1 | tee "$out/$stem.txt"
  local r=${PIPESTATUS[0]}
  [[ $r -ne 0 && $rc -eq 0 ]] && rc=$r
  record "$out" "bash bench/run_suite.sh $build${quick:+ $quick}: $exe $*${quick:+ $quick} --json $out/$stem.json > $out/$stem.txt" \
    "$stem.json" "$stem.txt"
  written+=("$stem")
  echo "run_suite.sh: wrote $out/$stem.json and $out/$stem.txt (exit $r)"
}
grouped=" stream_triad peak_flops map_saxpy workloads workloads_gpu nbody image_pipeline farm_grain queue_handoff "
run e2e-workloads "$bench" stream_triad peak_flops map_saxpy workloads nbody
run e2e-workloads_gpu "$bench" workloads_gpu
run e2e-image_pipeline "$bench" image_pipeline
run e2e-farm_grain "$bench" farm_grain
run e2e-queue "$bench" queue_handoff
for name in $("$bench" --list | awk '{ print $1 }'); do
  [[ $grouped == *" $name "* ]] || run "$name" "$bench" "$name"
done
if [[ -x $build/bench/sinew-bench-starpu ]]; then
  run e2e-starpu "$build/bench/sinew-bench-starpu" starpu_series starpu_saxpy
else
  echo "run_suite.sh: no $build/bench/sinew-bench-starpu (StarPU not found at configure time): StarPU peer skipped"
fi
for j in "$out"/*.json; do
  [[ -e $j ]] || continue
  stem=$(basename "$j" .json)
  [[ " ${written[*]} " == *" $stem "* ]] && continue
  forget "$out" "$stem.json" "$stem.txt"
  echo "run_suite.sh: removed $out/$stem.json and .txt: an earlier run's, not rewritten by this one"
done
if [[ -z "$quick" ]]; then
  py=${PYTHON:-python3}
  # pyenv's python3 often lacks matplotlib where Debian's has it.
  if ! "$py" -c 'import matplotlib' 2>/dev/null && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    py=/usr/bin/python3
  fi
  jsons=()
  for stem in "${written[@]}"; do [[ -e $out/$stem.json ]] && jsons+=("$out/$stem.json"); done
  "$py" bench/plot.py "${jsons[@]}" || echo "run_suite.sh: WARNING: plots not made (see above)" >&2
fi
exit $rc
