#!/bin/bash
# A/B(/C...) of builds of Sinew on the device: the same sinew-bench command
# run by each build in turn, ROUNDS rounds (the order of the builds is the
# same in every round). Each folder of BUILDS holds a sinew-bench and its
# libsinew.so.0; the other libraries come from LIBS (default dev-carry). Here:
#   BUILD=build bash bench/device_run.sh prepare                  # this tree -> dev-carry
#   mkdir -p dev-ab-old && cp <old>/bench/sinew-bench <old>/libsinew.so.0 dev-ab-old/
# On the device (carry dev-carry and the other folders):
#   BUILDS="dev-ab-old dev-carry" ROUNDS=4 bash bench/device_ab_builds.sh mir_suite --variant reduction --reps 31
# -> $OUT/ab-builds.tar.gz: ab-builds/<build>-<round>.{txt,json}, command.txt, machine.txt.
set -uo pipefail
root=$PWD
BUILDS=${BUILDS:?BUILDS=\"<folder> <folder> ...\"}
d=$OUT/ab-builds && mkdir -p "$d"
echo "BUILDS=\"$BUILDS\" ROUNDS=${ROUNDS:-4} bash bench/device_ab_builds.sh $*" > "$d/command.txt"
{ nproc; lscpu | head -20; } > "$d/machine.txt" 2>&1
for r in $(seq 1 "${ROUNDS:-4}"); do
  for b in $BUILDS; do
    dir=$root/$b
    LD_LIBRARY_PATH=$dir:$root/${LIBS:-dev-carry} SINEW_KERNELS_DIR=$root/graphs/kernels \
      timeout "${SECS:-120}" "$dir/sinew-bench" "$@" --json "$d/$b-$r.json" > "$d/$b-$r.txt" 2>&1
    echo "rc=$?" >> "$d/$b-$r.txt"
  done
done
tar czf "$OUT/ab-builds.tar.gz" -C "$OUT" ab-builds && rm -rf "$d"
