#!/usr/bin/env bash
# Runs build/bench/sinew-mpi-scaling (bench/mpi/mpi_scaling.cpp) on 1, 2 and
# 4 ranks for the farm of 1 ms items and the Series map, and prints each
# run's RESULT line with the speed-up and efficiency over 1 rank
# (E = T1 / (p * Tp)) and the CPU efficiency (CPU seconds of 1 rank / CPU
# seconds of all ranks); docs/distributed.md.
#   usage: bench/mpi_scaling.sh [BINARY] [REPEATS]    (default build/bench/sinew-mpi-scaling, 3)
# Run in the repository root: it also writes its output to
# bench/results/<N>core/mpi-scaling.txt (N = nproc), replacing the previous
# run's, with its line in that folder's runs.tsv (bench/runs_tsv.sh).
# The best of REPEATS runs is kept. Ranks are not bound to cores
# (--bind-to none): Open MPI binds each rank to one core when np <= 2, which
# would give the 1-rank run a single core.
set -euo pipefail
BIN=${1:-build/bench/sinew-mpi-scaling}
REPEATS=${2:-3}
MPIRUN=(mpirun --oversubscribe --bind-to none)
[[ $(id -u) -eq 0 ]] && MPIRUN+=(--allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=none
source "$(dirname "$0")/runs_tsv.sh"
results=bench/results/$(nproc)core
mkdir -p "$results"
# The library's commit, when the binary's build tree also has the sinew tool.
BUILD_COMMIT=$("$(dirname "$BIN")/../tools/sinew" --version 2>/dev/null | sed -n 's/.*(\(.*\))$/\1/p' || true)
scaling() {
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(uname -n); SINEW_THREADS=${SINEW_THREADS:-all}"
for mode in "farm --items 2000 --ms 1 --workers 2" "series --coeffs 4000 --units 4"; do
  t1=""
  for np in 1 2 4; do
    best="" line=""
    for ((r = 0; r < REPEATS; ++r)); do
      # shellcheck disable=SC2086
      out=$("${MPIRUN[@]}" -np "$np" "$BIN" $mode </dev/null | grep '^RESULT')
      s=$(grep -o 'seconds=[0-9.]*' <<<"$out" | cut -d= -f2)
      if [[ -z $best ]] || awk "BEGIN{exit !($s < $best)}"; then best=$s line=$out; fi
    done
    [[ -z $t1 ]] && t1=$best
    c=$(grep -o 'cpu_s=[0-9.]*' <<<"$line" | cut -d= -f2)
    [[ $np == 1 ]] && c1=$c
    # cpu_efficiency: CPU seconds on 1 rank / CPU seconds of all ranks (the
    # distribution's overhead, whatever share of the cores the runs got).
    awk -v t1="$t1" -v tp="$best" -v p="$np" -v l="$line" -v c1="$c1" -v c="$c" \
      'BEGIN{printf "%s speedup=%.2f efficiency=%.2f cpu_efficiency=%.2f\n", l, t1/tp, t1/(p*tp), c1/c}'
  done
done
}
scaling | tee "$results/mpi-scaling.txt"
record "$results" "${SINEW_THREADS:+SINEW_THREADS=$SINEW_THREADS }bash bench/mpi_scaling.sh $BIN $REPEATS" mpi-scaling.txt
