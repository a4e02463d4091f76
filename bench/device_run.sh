#!/bin/bash
# Runs on the 16-core device machine (one H200 or H100; its OpenCL loader
# lists PoCL and NVIDIA CUDA). Binaries are built here and carried.
#   bash bench/device_run.sh prepare            # here: from build-lead/ (Release) and build-fuzz/ (make fuzz)
#   bash dev-carry/run.sh devices|schedulers|sched16|fuzz|e2e|opencl   # on the device, dev-carry carried; results in $OUT
#   (CARRY=<dir> when the carried folder has another name)
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
  cp -L $B/libsinew.so.0 dev-carry/
  for l in libtbb.so.12 libtbbmalloc.so.2 libtbbbind_2_5.so.3 libhwloc.so.15 libgomp.so.1 libnuma.so.1; do
    cp -L "/usr/lib/x86_64-linux-gnu/$l" dev-carry/
  done
  # Open MPI, when libsinew was built with it (SINEW_MPI): the device has none.
  for l in libmpi_cxx.so.40 libmpi.so.40 libopen-pal.so.40 libopen-rte.so.40 libevent_core-2.1.so.7 \
           libevent_pthreads-2.1.so.7; do
    p=$(ldd $B/libsinew.so.0 | awk -v l=$l '$1 == l { print $3 }')
    [ -n "$p" ] && cp -L "$p" dev-carry/
  done
  if [ -d build-fuzz/fuzz ]; then
    cp build-fuzz/fuzz/fuzz_* dev-carry/fuzz/
    cp -L build-fuzz/libsinew.so.0 dev-carry/fuzz/
    strip --strip-debug dev-carry/fuzz/*
  fi
  cp "$0" dev-carry/run.sh
  du -sh dev-carry
  exit 0
fi
root=$PWD
carry=${CARRY:-dev-carry}
export LD_LIBRARY_PATH=$root/$carry
cd "$carry"
bench() {  # bench NAME SECONDS [options...]: one benchmark, JSON and text in $OUT
  local name=$1 secs=$2; shift 2
  timeout "$secs" ./sinew-bench "$name" "$@" --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  echo "$name rc=$?" >> "$OUT/$name.txt"
}
case "${1:-}" in
  devices)
    { nproc; lscpu | head -20; ./sinew devices; ./sinew --version; } > "$OUT/machine.txt" 2>&1 ;;
  schedulers)  # issues 3, 4, 6
    { nproc; lscpu | head -20; ./sinew devices; } > "$OUT/machine.txt" 2>&1
    # --quick: each of these finishes in < 30 s on 16 workers (full sizes did not in 60 s)
    bench sched_spawn 60 --quick
    bench sched_grain 60 --quick
    bench mir_suite 150
    bench numa_sim 50
    bench map_dispatch 40 --quick
    bench multidevice_series 60
    bench multidevice_unbalanced 60
    bench multidevice_saxpy 40
    bench opencl_leaves 30
    bench group_leaves 50 ;;
  sched16)  # issues 3, 6: scheduler tests on 16 real cores, the scheduler suite and group_leaves,
            # < 7 min; one tarball $OUT/sched-16core.tar.gz
    stem=$(date -u +%F)-16core-sched; d=$OUT/$stem && mkdir -p "$d"
    { nproc; lscpu | head -20; ./sinew devices; } > "$d/machine.txt" 2>&1
    { timeout 90 ./sinew-tests "[scheduler],[sched3],[steal],[deal]" ; echo "sinew-tests rc=$?"; } > "$d/tests.txt" 2>&1
    one() {  # one NAME SECONDS [options]: one benchmark, JSON and text in $d
      local name=$1 secs=$2; shift 2
      timeout "$secs" ./sinew-bench "$name" "$@" --json "$d/$name.json" > "$d/$name.txt" 2>&1
      echo "$name rc=$?" >> "$d/$name.txt"
    }
    one sched_spawn 25 --quick
    one sched_grain 45 --quick
    one map_dispatch 25 --quick
    one mir_suite 150  # 53 s quiet (60 rounds for Map and Reduction since a8b7991), 73 s on a busy host
    one numa_sim 40
    one group_leaves 60
    grep -h '^RATIO' "$d"/*.txt > "$d/ratios.txt"
    tar czf "$OUT/sched-16core.tar.gz" -C "$OUT" "$stem" && rm -rf "$d" ;;
  fuzz)  # every harness in parallel for FUZZ_SECONDS (default 560)
    export LD_LIBRARY_PATH=$root/$carry/fuzz:$root/$carry
    secs=${FUZZ_SECONDS:-560}
    for h in fuzz/fuzz_*; do
      short=$(basename "$h"); short=${short#fuzz_}
      mkdir -p "$OUT/fuzz/$short"
      scratch=$(mktemp -d)
      "$h" "$scratch" "$root/tests/fuzz/corpus/$short" -max_total_time="$secs" -max_len=65536 -timeout=20 \
        -artifact_prefix="$OUT/fuzz/$short/" -print_final_stats=1 > "$OUT/fuzz/$short.log" 2>&1 &
    done
    wait ;;
  e2e)  # issue 7: every 16-core number of docs/performance.md, full sizes, < 8 min;
         # one tarball $OUT/e2e-16core.tar.gz (unpack into bench/results/)
    export SINEW_KERNELS_DIR=$root/graphs/kernels
    stem=$(date -u +%F)-16core-e2e; d=$OUT/$stem && mkdir -p "$d"
    { nproc; lscpu | head -20; ./sinew devices; } > "$d/machine.txt" 2>&1
    group() {  # group STEM SECONDS EXECUTABLE ARGS...: one process, JSON and text in $d
      local stem=$1 secs=$2 exe=$3; shift 3
      timeout "$secs" "$exe" "$@" --json "$d/$stem.json" > "$d/$stem.txt" 2>&1
      echo "$stem rc=$?" >> "$d/$stem.txt"
    }
    # stream_triad first: workloads' saxpy-vs-triad ratio uses its value;
    # peak_flops before nbody: its notes compare with the measured peak.
    # (pipeline_overhead at 16 cores: 2026-11-22-16core-h200host.json;
    # pipeline_overhead alone takes 150 s there.) farm_grain's full sweep did
    # not end in 50 s (16 runs of 3 grains x 2 runtimes x 5 core counts), so
    # --quick; queue_handoff full size (10^7 items). Timeouts add up to 530 s.
    group 16core-e2e-workloads 130 ./sinew-bench stream_triad peak_flops map_saxpy workloads nbody
    group 16core-e2e-image_pipeline 110 ./sinew-bench image_pipeline
    group 16core-e2e-farm_grain 90 ./sinew-bench farm_grain --quick
    group 16core-e2e-queue 120 ./sinew-bench queue_handoff
    [ -x ./sinew-bench-starpu ] && group 16core-e2e-starpu 80 ./sinew-bench-starpu starpu_series starpu_saxpy
    tar czf "$OUT/e2e-16core.tar.gz" -C "$OUT" "$stem" && rm -rf "$d" ;;
  opencl)  # issue 4: multi-device balancing, C++ vs PoCL, OpenCL leaves, < 9 min;
           # one tarball $OUT/opencl-16core.tar.gz (unpack into bench/results/)
    export SINEW_KERNELS_DIR=$root/graphs/kernels
    stem=$(date -u +%F)-16core-opencl; d=$OUT/$stem && mkdir -p "$d"
    { nproc; lscpu | head -20; ./sinew devices; } > "$d/machine.txt" 2>&1
    one() {  # one NAME SECONDS: one benchmark, JSON and text in $d
      timeout "$2" ./sinew-bench "$1" --json "$d/$1.json" > "$d/$1.txt" 2>&1
      echo "$1 rc=$?" >> "$d/$1.txt"
    }
    one multidevice_unbalanced 200
    one multidevice_series 90
    one multidevice_saxpy 60
    one cpp_vs_opencl_cpu 120
    one opencl_leaves 60
    grep -h '^RATIO' "$d"/*.txt > "$d/ratios.txt"
    tar czf "$OUT/opencl-16core.tar.gz" -C "$OUT" "$stem" && rm -rf "$d" ;;
  *) echo "usage: run.sh devices|schedulers|sched16|fuzz|e2e|opencl" >&2; exit 2 ;;
esac
