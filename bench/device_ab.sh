#!/bin/bash
# A/B of the tbb scheduler's waiting thread on the device: SINEW_TBB_WAITER=help
# (default: n-slot arenas, the waiter works) vs =sleep (n+1 slots, waiters
# sleep), alternating, ROUNDS rounds, Sinew's variants only (the peers do not
# use Sinew's scheduler). Run there with dev-carry carried:
#   bash bench/device_ab.sh        # -> $OUT/ab-16core.tar.gz (unpack into bench/results/)
set -uo pipefail
root=$PWD
export LD_LIBRARY_PATH=$root/dev-carry SINEW_KERNELS_DIR=$root/graphs/kernels
B=$root/dev-carry/sinew-bench
stem=$(date -u +%F)-16core-tbb-waiter-ab; d=$OUT/$stem && mkdir -p "$d"
{ nproc; lscpu | head -20; } > "$d/machine.txt" 2>&1
for r in $(seq 1 "${ROUNDS:-3}"); do
  for mode in help sleep; do
    export SINEW_TBB_WAITER=$mode
    timeout 60 "$B" workloads --variant "sinew map" --json "$d/$mode-$r-workloads.json" > "$d/$mode-$r-workloads.txt" 2>&1
    timeout 60 "$B" image_pipeline --variant "sinew pipeline" --reps 7 --json "$d/$mode-$r-image.json" > "$d/$mode-$r-image.txt" 2>&1
    timeout 30 "$B" farm_grain --quick --variant "sinew farm" --json "$d/$mode-$r-farm.json" > "$d/$mode-$r-farm.txt" 2>&1
    timeout 40 "$B" sched_grain --quick --json "$d/$mode-$r-sched_grain.json" > "$d/$mode-$r-sched_grain.txt" 2>&1
  done
done
tar czf "$OUT/ab-16core.tar.gz" -C "$OUT" "$stem" && rm -rf "$d"
