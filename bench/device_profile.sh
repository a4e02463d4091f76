#!/bin/bash
# Profiles of the 16-core gaps of docs/performance.md, on the device machine.
# Carried folder: dev-perf/ = Debian's /usr/bin/perf with the libraries ldd
# lists for it (libc/libm excepted), plus sinew-bench and its libraries
# (as bench/device_run.sh prepare collects them). Run there as
#   bash bench/device_profile.sh            # -> $OUT/profiles-16core.txt
#   bash bench/device_profile.sh reduction  # mir_suite's Reduction, steal vs deal
set -uo pipefail
root=$PWD
export LD_LIBRARY_PATH=$root/dev-perf SINEW_KERNELS_DIR=$root/graphs/kernels
P=$root/dev-perf/perf B=$root/dev-perf/sinew-bench
out=$OUT/profiles-16core.txt
log() { echo "\$ $*" >> "$out"; "$@" >> "$out" 2>&1; echo >> "$out"; }
stat() {  # stat VARIANT BENCH ARGS...: context switches, migrations and CPU time of one variant
  local v=$1; shift
  log timeout 60 "$P" stat -e task-clock,context-switches,cpu-migrations,page-faults -- "$B" "$@" --variant "$v"
}
record() {  # record TAG VARIANT BENCH ARGS...: where the time goes (flat, top 25)
  local tag=$1 v=$2; shift 2
  timeout 90 "$P" record -F 999 -g -o /tmp/$tag.data -- "$B" "$@" --variant "$v" > /dev/null 2>&1
  log "$P" report -i /tmp/$tag.data --no-children --sort dso,symbol -g none --percent-limit 1.5 --stdio
}
{ echo "# perf on the 16-core device: $(nproc) cpus, $(uname -r), $($P --version 2>&1)"; \
  echo "# perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)"; date -u; } > "$out"
if [ "${1:-}" = reduction ]; then
  # Issue 3: mir_suite's Reduction under deal vs steal on one node (16 cores).
  for v in "reduction steal+fine" "reduction deal+fine"; do
    stat "$v" mir_suite --reps 400
  done
  for v in steal deal; do  # by thread: the submitting thread vs the workers
    timeout 90 "$P" record -F 999 -g -o /tmp/red_$v.data -- "$B" mir_suite --reps 400 --variant "reduction $v+fine" > /dev/null 2>&1
    log "$P" report -i /tmp/red_$v.data --no-children --sort comm,dso,symbol -g none --percent-limit 0.4 --stdio
  done
  exit 0
fi
# 1. Short single-unit maps: Segmentation 200^3, Sinew map vs tbb::parallel_for vs OpenMP.
for v in "segmentation 200^3 sinew map" "segmentation 200^3 tbb::" "segmentation 200^3 openmp"; do
  stat "$v" workloads --reps 1000 --warmup 20
done
record seg "segmentation 200^3 sinew map" workloads --reps 1000 --warmup 20
record segt "segmentation 200^3 tbb::" workloads --reps 1000 --warmup 20
# 2. OpenCL leaf vs direct OpenCL on PoCL, Solarize 1024^2.
for v in "solarize 1024^2 sinew opencl" "solarize 1024^2 opencl direct"; do
  stat "$v" workloads --reps 500 --warmup 20
done
record cl "solarize 1024^2 sinew opencl" workloads --reps 500 --warmup 20
# 3. Farm of 5 us items on 16 cores vs the flow graph.
for v in "5us sinew farm x16" "5us flow graph x16" "5us sinew farm x8"; do
  stat "$v" farm_grain --quick --reps 40
done
record farm "5us sinew farm x16" farm_grain --quick --reps 40
record farmt "5us flow graph x16" farm_grain --quick --reps 40
# 4. Image pipeline 2048^2 vs the flow graph.
for v in "2048^2 sinew pipeline" "2048^2 tbb flow graph"; do
  stat "$v" image_pipeline --reps 8
done
record img "2048^2 sinew pipeline" image_pipeline --reps 8
record imgt "2048^2 tbb flow graph" image_pipeline --reps 8
