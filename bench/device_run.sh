#!/bin/bash
# The 16-core device run behind bench/results/*-16core-h200host.*.
#   bash bench/device_run.sh prepare   # here: build/ must exist; fills dev-carry/ (git-ignored)
#   bash dev-carry/run.sh              # on the device machine, with dev-carry carried; writes to $OUT
set -euo pipefail
if [ "${1:-}" = prepare ]; then
  rm -rf dev-carry && mkdir dev-carry
  cp build/bench/sinew-bench build/tests/sinew-tests build/tools/sinew dev-carry/
  cp -L build/libsinew.so.0 dev-carry/
  for l in libtbb.so.12 libtbbmalloc.so.2 libtbbbind_2_5.so.3 libhwloc.so.15 libgomp.so.1; do
    cp -L "/usr/lib/x86_64-linux-gnu/$l" dev-carry/
  done
  cp "$0" dev-carry/run.sh
  exit 0
fi
# On the device: the benchmarks and the test suite on 16 threads.
export LD_LIBRARY_PATH=$PWD/dev-carry
cd dev-carry
{ nproc; lscpu | head -20; ldd ./sinew-bench | head -20; } > "$OUT/machine.txt" 2>&1
./sinew --version >> "$OUT/machine.txt" 2>&1
timeout 240 ./sinew-tests > "$OUT/tests16.txt" 2>&1; echo "tests rc=$?" >> "$OUT/tests16.txt"
{ SINEW_SCHEDULER=steal timeout 120 ./sinew-tests "[runtime],[stream]"; echo "steal rc=$?";
  SINEW_SCHEDULER=deal timeout 120 ./sinew-tests "[runtime],[stream],[deal]"; echo "deal rc=$?"; } > "$OUT/tests16-policies.txt" 2>&1
timeout 200 ./sinew-bench --all --json "$OUT/16core.json" > "$OUT/16core.txt" 2>&1; echo "bench rc=$?" >> "$OUT/16core.txt"
timeout 60 ./sinew demo --images 64 --size 2048 > "$OUT/demo16.txt" 2>&1; echo "demo rc=$?" >> "$OUT/demo16.txt"
