#!/bin/bash
# Runs on the 16-core device machine (one H200 or H100; its OpenCL loader
# lists PoCL and NVIDIA CUDA). Binaries are built here and carried.
#   bash bench/device_run.sh prepare        # here: from build-lead/ (BUILD=<dir>; Release) and build-fuzz/ (make fuzz)
#   bash dev-carry/run.sh MODE              # on the device, dev-carry carried (CARRY=<dir> when it has another name):
#                                           #   -> $OUT/MODE-<N>core.tar.gz
#   bash bench/device_run.sh install FILE.tar.gz...   # here, in the repository root: into bench/results/<N>core/
# MODE: devices | sched16 | e2e | maps | gpu | opencl | tasks | pipeline | dag | stream | endpoints | fuzz (below). A mode writes
# the same file names every time, so `install` REPLACES the previous run's files
# of those names (a .json/.txt pair whole: a benchmark killed by its timeout
# leaves no stale JSON behind) and their lines in runs.tsv (file, UTC date,
# build commit, command; bench/runs_tsv.sh). bench/results/README.md lists the files.
set -uo pipefail
if [ "${1:-}" = prepare ]; then
  B=${BUILD:-build-lead}
  rm -rf dev-carry && mkdir -p dev-carry/fuzz
  cp $B/bench/sinew-bench $B/tests/sinew-tests $B/tools/sinew dev-carry/
  # The StarPU peer (built when libstarpu-dev is installed) and StarPU's libraries.
  if [ -x $B/bench/sinew-bench-starpu ]; then
    cp $B/bench/sinew-bench-starpu dev-carry/
    for l in libstarpu-1.3.so.9 libglpk.so.40 libcolamd.so.2 libamd.so.2 libltdl.so.7 libgmp.so.10 \
             libsuitesparseconfig.so.5; do
      cp -L "/usr/lib/x86_64-linux-gnu/$l" dev-carry/
    done
  fi
  cp -L $B/libsinew_*.so.0 dev-carry/   # the components: core, opencl, zmq, json, mpi
  for l in libtbb.so.12 libtbbmalloc.so.2 libtbbbind_2_5.so.3 libhwloc.so.15 libgomp.so.1 libnuma.so.1; do
    cp -L "/usr/lib/x86_64-linux-gnu/$l" dev-carry/
  done
  # Open MPI and ZeroMQ, when sinew::mpi and sinew::zmq were built: the device has neither.
  for l in libmpi_cxx.so.40 libmpi.so.40 libopen-pal.so.40 libopen-rte.so.40 libevent_core-2.1.so.7 \
           libevent_pthreads-2.1.so.7 libzmq.so.5 libmosquitto.so.1 libsodium.so.23 libpgm-5.3.so.0 libnorm.so.1 libbsd.so.0 \
           libmd.so.0 libgssapi_krb5.so.2 libkrb5.so.3 libk5crypto.so.3 libkrb5support.so.0 libkeyutils.so.1; do
    p=$(ldd $B/tools/sinew | awk -v l=$l '$1 == l { print $3 }')
    [ -n "$p" ] && cp -L "$p" dev-carry/
  done
  # The MQTT half of endpoints starts mosquitto brokers: the binary and the libraries the device lacks.
  if [ -x /usr/sbin/mosquitto ]; then
    mkdir -p dev-carry/mosq
    cp /usr/sbin/mosquitto dev-carry/mosq/
    for l in libwrap.so.0 libdlt.so.2 libnsl.so.2 libtirpc.so.3; do
      p=$(ldd /usr/sbin/mosquitto | awk -v l=$l '$1 == l { print $3 }')
      [ -n "$p" ] && cp -L "$p" dev-carry/mosq/
    done
  fi
  if [ -d build-fuzz/fuzz ]; then
    cp build-fuzz/fuzz/fuzz_* dev-carry/fuzz/
    cp -L build-fuzz/libsinew_*.so.0 dev-carry/fuzz/
    strip --strip-debug dev-carry/fuzz/*
    # the fuzz build's commit (cmake/build_commit.cmake), for fuzz-*.log's line in runs.tsv
    sed -n 's/.*"\(.*\)".*/\1/p' build-fuzz/generated/sinew_build_commit.h > dev-carry/fuzz/build_commit 2>/dev/null
  fi
  cp "$0" dev-carry/run.sh
  cp "$(dirname "$0")/runs_tsv.sh" dev-carry/
  du -sh dev-carry
  exit 0
fi
if [ "${1:-}" = install ]; then
  shift
  source "$(dirname "$0")/runs_tsv.sh"
  for t in "$@"; do
    tmp=$(mktemp -d)
    tar xzf "$t" -C "$tmp" || exit 1
    for src in "$tmp"/*core; do
      dest=bench/results/$(basename "$src")
      mkdir -p "$dest"
      for f in "$src"/*; do  # first the previous run's files of these names
        n=$(basename "$f")
        [ "$n" = runs.tsv ] && continue
        forget "$dest" "$n" "${n%.*}.json" "${n%.*}.txt"
        [ -d "$f" ] && rm -rf "${dest:?}/${n:?}"  # a fuzz harness's crashes
      done
      for f in "$src"/*; do
        [ "$(basename "$f")" = runs.tsv ] || cp -r "$f" "$dest/"
      done
      merge_runs "$dest" < "$src/runs.tsv"
      echo "install: $t -> $dest/"
    done
    rm -rf "$tmp"
  done
  exit 0
fi
mode=${1:-}
carry=${CARRY:-dev-carry}
case "$mode" in
  devices|sched16|e2e|maps|gpu|opencl|tasks|pipeline|dag|stream|endpoints|fuzz) ;;
  *) echo "usage: bash bench/device_run.sh prepare | install FILE.tar.gz...; on the device: bash $carry/run.sh devices|sched16|e2e|maps|gpu|opencl|tasks|pipeline|dag|stream|endpoints|fuzz" >&2
     exit 2 ;;
esac
root=$PWD
export LD_LIBRARY_PATH=$root/$carry SINEW_KERNELS_DIR=$root/graphs/kernels
cd "$carry" || exit 2
source ./runs_tsv.sh
m=$(nproc)core
d=$OUT/$m && mkdir -p "$d"
BUILD_COMMIT=$(./sinew --version 2>/dev/null | sed -n 's/.*(\(.*\))$/\1/p')
machine() {  # the machine's description, $d/machine.txt
  { nproc; lscpu | head -20; ./sinew devices; ./sinew --version; } > "$d/machine.txt" 2>&1
  record "$d" "bash $carry/run.sh $mode: { nproc; lscpu | head -20; ./sinew devices; ./sinew --version; }" machine.txt
}
data_parallel_files() {  # e2e-workloads, e2e-image_pipeline, e2e-workloads_gpu: modes e2e and maps
  # stream_triad first: workloads' saxpy-vs-triad ratio uses its value;
  # peak_flops before nbody: its notes compare with the measured peak.
  one e2e-workloads 130 ./sinew-bench stream_triad peak_flops map_saxpy workloads nbody
  one e2e-image_pipeline 110 ./sinew-bench image_pipeline
  gpu_file
}
gpu_file() {  # e2e-workloads_gpu: modes e2e, maps and gpu
  one e2e-workloads_gpu 90 ./sinew-bench workloads_gpu  # its own process: a GPU context slows OpenMP
}
one() {  # one STEM SECONDS EXECUTABLE ARGS...: one process, JSON and text in $d
  local stem=$1 secs=$2 exe=$3
  shift 3
  timeout "$secs" "$exe" "$@" --json "$d/$stem.json" > "$d/$stem.txt" 2>&1
  echo "$stem rc=$?" >> "$d/$stem.txt"
  record "$d" "bash $carry/run.sh $mode: timeout $secs $exe $* --json $stem.json > $stem.txt" "$stem.json" "$stem.txt"
}
case "$mode" in
  devices)
    machine ;;
  sched16)  # issues 3, 6: scheduler tests on 16 real cores, the scheduler suite and group_leaves, < 7 min
    machine
    { timeout 90 ./sinew-tests "[scheduler],[sched3],[steal],[deal]" ; echo "sinew-tests rc=$?"; } > "$d/scheduler-tests.txt" 2>&1
    record "$d" "bash $carry/run.sh $mode: timeout 90 ./sinew-tests \"[scheduler],[sched3],[steal],[deal]\"" scheduler-tests.txt
    # --quick: each of these finishes in < 30 s on 16 workers (full sizes did not in 60 s);
    # sched_spawn runs at full size in mode tasks.
    one sched_grain 45 ./sinew-bench sched_grain --quick
    one map_dispatch 25 ./sinew-bench map_dispatch --quick
    one mir_suite 150 ./sinew-bench mir_suite  # 53 s quiet (60 rounds for Map and Reduction since a8b7991), 73 s on a busy host
    one numa_sim 40 ./sinew-bench numa_sim
    one group_leaves 60 ./sinew-bench group_leaves ;;
  e2e)  # issue 7: the e2e-* files (farm_grain at full size comes from mode pipeline), < 8 min.
    machine
    # farm_grain runs at full size in mode pipeline; queue_handoff full size
    # (10^7 items). Timeouts add up to 570 s.
    data_parallel_files
    one e2e-queue 120 ./sinew-bench queue_handoff
    [ -x ./sinew-bench-starpu ] && one e2e-starpu 120 ./sinew-bench-starpu starpu_series starpu_saxpy ;;
  maps)  # issue 21: the data-parallel files of mode e2e alone (workloads, image_pipeline), < 5 min
    machine
    data_parallel_files ;;
  gpu)  # the OpenCL leaf on the GPU alone (e2e-workloads_gpu), about 30 s
    machine
    gpu_file ;;
  opencl)  # issue 4: multi-device balancing, C++ vs PoCL, OpenCL leaves, < 9 min
    machine
    one multidevice_unbalanced 200 ./sinew-bench multidevice_unbalanced
    one multidevice_series 90 ./sinew-bench multidevice_series
    one multidevice_saxpy 60 ./sinew-bench multidevice_saxpy
    one cpp_vs_opencl_cpu 150 ./sinew-bench cpp_vs_opencl_cpu
    one opencl_leaves 60 ./sinew-bench opencl_leaves ;;
  tasks)  # issue 22: the scheduling library on 16 cores (tests, a million-task stress, sched_spawn, task_graphs, algorithms; all full size), < 9 min
    machine
    { timeout 90 ./sinew-tests "[task_graph],[nested],[async],[algorithms],[sched3]" ; echo "sinew-tests rc=$?"; } > "$d/tasks-tests.txt" 2>&1
    record "$d" "bash $carry/run.sh $mode: timeout 90 ./sinew-tests \"[task_graph],[nested],[async],[algorithms],[sched3]\"" tasks-tests.txt
    { timeout 60 ./sinew-tests "every policy: one million tasks in random spawn trees and random graphs" ; echo "sinew-tests rc=$?"; } > "$d/tasks-stress.txt" 2>&1
    record "$d" "bash $carry/run.sh $mode: timeout 60 ./sinew-tests \"every policy: one million tasks in random spawn trees and random graphs\"" tasks-stress.txt
    one sched_spawn 90 ./sinew-bench sched_spawn
    one task_graphs 120 ./sinew-bench task_graphs
    one algorithms 240 ./sinew-bench algorithms ;;
  pipeline)  # issue 20, the per-unit path at full size: farm_grain (about 60 s on 16 cores), pipeline_overhead (about 200 s)
    machine
    one e2e-farm_grain 150 ./sinew-bench farm_grain
    one pipeline_overhead 400 ./sinew-bench pipeline_overhead ;;
  dag)  # sinew::dag vs oneTBB flow graphs at full size: 100-130 s on 16 cores
    machine
    one dag 300 ./sinew-bench dag ;;
  stream)  # 1 GB of lines and of 64-byte records through `sinew run` vs a one-thread loop, 5 rounds
    machine
    one stream_records 540 ./sinew-bench stream_records --reps 5 ;;
  endpoints)  # issue 23: messages through ZeroMQ and MQTT, Sinew vs a hand-written loop, 100 B and 64 KiB (about 4 min)
    machine
    export SINEW_MOSQUITTO=$root/$carry/mosq/mosquitto LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$root/$carry/mosq
    one endpoints 480 ./sinew-bench endpoints ;;
  fuzz)  # every harness in parallel for FUZZ_SECONDS (default 560): fuzz-<harness>.log, crashes in fuzz-<harness>/
    export LD_LIBRARY_PATH=$root/$carry/fuzz:$root/$carry
    BUILD_COMMIT=$(cat fuzz/build_commit 2>/dev/null)
    secs=${FUZZ_SECONDS:-560}
    for h in fuzz/fuzz_*; do
      short=$(basename "$h"); short=${short#fuzz_}
      mkdir -p "$d/fuzz-$short"
      scratch=$(mktemp -d)
      args="-max_total_time=$secs -max_len=65536 -timeout=20 -print_final_stats=1"
      cmd="bash $carry/run.sh $mode: $h <scratch dir> tests/fuzz/corpus/$short $args"
      log_header "$d/fuzz-$short.log" "$cmd"
      # shellcheck disable=SC2086
      "$h" "$scratch" "$root/tests/fuzz/corpus/$short" $args -artifact_prefix="$d/fuzz-$short/" \
        >> "$d/fuzz-$short.log" 2>&1 &
      record "$d" "$cmd" "fuzz-$short.log"
    done
    wait
    rmdir "$d"/fuzz-*/ 2>/dev/null ;;  # no crash: no folder
esac
tar czf "$OUT/$mode-$m.tar.gz" -C "$OUT" "$m" && rm -rf "$d"
