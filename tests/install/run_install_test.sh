#!/usr/bin/env bash
# Install a Sinew build tree into a scratch prefix, then build and run a tiny
# find_package(Sinew CONFIG) consumer against it.
#   usage: run_install_test.sh <build-dir> <scratch-dir>
# Optional env: CXX (compiler for the consumer), SINEW_CONSUMER_FLAGS (extra
# compile+link flags, e.g. sanitizer flags matching the installed library).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 <build-dir> <scratch-dir>" >&2
    exit 2
fi

build_dir=$(cd "$1" && pwd)
scratch=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix="$scratch/prefix"
consumer_build="$scratch/consumer-build"

# Expected version, from the build tree's generated package version file.
expected=$(sed -n 's/^set(PACKAGE_VERSION "\([^"]*\)").*/\1/p' \
    "$build_dir/SinewConfigVersion.cmake")
if [[ -z "$expected" ]]; then
    echo "FAIL: could not read version from $build_dir/SinewConfigVersion.cmake" >&2
    exit 1
fi

rm -rf "$prefix" "$consumer_build"
mkdir -p "$scratch"

echo "== install $build_dir -> $prefix"
cmake --install "$build_dir" --prefix "$prefix"

echo "== configure consumer"
flags=${SINEW_CONSUMER_FLAGS:-}
cmake -S "$here/consumer" -B "$consumer_build" \
    -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags"

echo "== build consumer"
cmake --build "$consumer_build"

echo "== run consumer"
out=$("$consumer_build/sinew-consumer")
echo "$out"
if [[ "$out" != *"$expected"* ]]; then
    echo "FAIL: consumer output does not contain version '$expected'" >&2
    exit 1
fi

echo "== core-only consumer (find_package COMPONENTS core, links sinew::core)"
core_build="$scratch/core-consumer-build"
rm -rf "$core_build"
cmake -S "$here/core_consumer" -B "$core_build" \
    -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags"
cmake --build "$core_build"
core_out=$("$core_build/sinew-core-consumer")
echo "$core_out"
if [[ "$core_out" != "core consumer: OK $expected" ]]; then
    echo "FAIL: core consumer printed '$core_out'" >&2
    exit 1
fi
# What the binary loads, and which headers compiling it read.
loaded=$(ldd "$core_build/sinew-core-consumer")
echo "$loaded"
if grep -Eq 'libOpenCL|libmpi|libsinew_(opencl|json|mpi)' <<<"$loaded"; then
    echo "FAIL: the core-only consumer loads OpenCL, MPI or a non-core Sinew library" >&2
    exit 1
fi
if ! grep -q 'libsinew_core' <<<"$loaded"; then
    echo "FAIL: the core-only consumer does not load libsinew_core (ldd above)" >&2
    exit 1
fi
deps=$(find "$core_build" -name 'main.cpp*.d' -print -quit)
if [[ -z "$deps" ]]; then
    echo "FAIL: no dependency file for the core consumer's main.cpp" >&2
    exit 1
fi
if grep -Eq '/CL/|nlohmann|/mpi\.h|/openmpi/' "$deps"; then
    echo "FAIL: compiling the core consumer read OpenCL, nlohmann/json or MPI headers:" >&2
    grep -Eo '[^ ]*(/CL/|nlohmann|/mpi\.h|/openmpi/)[^ ]*' "$deps" | sort -u >&2
    exit 1
fi

echo "== run installed tool"
"$prefix/bin/sinew" --version

echo "install_consumer: OK (version $expected)"
