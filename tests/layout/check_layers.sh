#!/usr/bin/env bash
# The include rules of docs/layout.md: each folder includes only the parts of
# Sinew below it. Prints every include that breaks a rule; exit 1 if any.
#   usage: check_layers.sh <source-dir>
set -euo pipefail
src=${1:?usage: check_layers.sh <source-dir>}
cd "$src"

status=0
# check <what may be included, as an extended regex of <sinew/...> paths> <files...>
check() {
    local allowed=$1; shift
    local f line
    for f in "$@"; do
        [[ -f $f ]] || continue
        while IFS= read -r line; do
            echo "layout: $f: includes <sinew/$line> (allowed here: $allowed)"
            status=1
        done < <(grep -oE '#include[[:space:]]*<sinew/[^>]+>' "$f" | sed -E 's/.*<sinew\/([^>]+)>/\1/' |
                 grep -vE "^($allowed)" || true)
    done
}
# Headers outside the core that a core file must not name at all.
forbid() {
    local pattern=$1 what=$2; shift 2
    local hits
    hits=$(grep -lE "$pattern" "$@" 2>/dev/null || true)
    for f in $hits; do
        echo "layout: $f: includes $what"
        status=1
    done
}

shopt -s nullglob
core_engine=(engine/*.cpp engine/*.hpp include/sinew/engine/*.hpp)
core_sched=(schedulers/*.cpp schedulers/*.hpp include/sinew/schedulers/*.hpp)
skeletons=(nodes/skeletons/*.cpp nodes/skeletons/*.hpp include/sinew/skeletons/*.hpp)
io=(nodes/io/*.cpp nodes/io/*.hpp include/sinew/io/*.hpp)
distributed=(nodes/distributed/*.cpp nodes/distributed/*.hpp include/sinew/distributed/*.hpp)
opencl=(nodes/opencl/*.cpp nodes/opencl/*.hpp include/sinew/opencl/*.hpp)
messaging=(nodes/io/zmq/*.cpp nodes/io/zmq/*.hpp nodes/io/mqtt/*.cpp nodes/io/mqtt/*.hpp)

check 'engine/|schedulers/|detail/' "${core_engine[@]}" "${core_sched[@]}"
check 'engine/|schedulers/|skeletons/|detail/' "${skeletons[@]}"
check 'engine/|schedulers/|io/|workloads/|detail/' "${io[@]}"
check 'engine/|schedulers/|skeletons/|distributed/|io/|detail/' "${distributed[@]}"
check 'engine/|schedulers/|skeletons/|opencl/|detail/' "${opencl[@]}"
check 'engine/|schedulers/|io/|detail/' "${messaging[@]}"

core=("${core_engine[@]}" "${core_sched[@]}" "${skeletons[@]}" "${io[@]}" nodes/distributed/distributed.cpp
      include/sinew/distributed/distributed.hpp include/sinew/sinew.hpp include/sinew/io.hpp)
forbid '#include[[:space:]]*[<"](CL/|nlohmann/|mpi\.h)' 'an OpenCL, nlohmann/json or MPI header' "${core[@]}"
forbid '#include[[:space:]]*[<"]mpi\.h' '<mpi.h> outside the MPI transport' "${opencl[@]}" engine/json/*.cpp
forbid '#include[[:space:]]*[<"](CL/)' 'an OpenCL header outside nodes/opencl' engine/json/*.cpp engine/json/*.hpp
forbid '#include[[:space:]]*[<"](zmq\.h|zmq\.hpp|zmq_addon\.hpp|mosquitto\.h)' \
  'a ZeroMQ or libmosquitto header outside nodes/io/zmq and nodes/io/mqtt' "${core[@]}" engine/json/*.cpp engine/json/*.hpp \
  include/sinew/io/*.hpp

if [[ $status -eq 0 ]]; then
    echo "layout: every include follows docs/layout.md"
fi
exit $status
