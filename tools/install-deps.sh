#!/usr/bin/env bash
# Check (and, as root, install) the Debian packages needed to build Sinew.
#   usage: tools/install-deps.sh [package ...]   (default: the list below)
set -euo pipefail

DEFAULT_PACKAGES=(
    cmake g++ make
    libtbb-dev
    ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers pocl-opencl-icd
    nlohmann-json3-dev
    catch2
    libhwloc-dev libnuma-dev
    libcli11-dev
    libbenchmark-dev
    graphviz
    openmpi-bin libopenmpi-dev
    libzmq3-dev cppzmq-dev # ZeroMQ sources and sinks (sinew::zmq)
    libmosquitto-dev       # MQTT sources and sinks (sinew::mqtt)
    mosquitto              # the broker the MQTT tests start on a loopback port
    libstarpu-dev
    python3-jsonschema    # tests/cli/schema.sh (ctest: skipped without it)
    ccache                # the Makefile compiles through it when it is installed
)

if [[ $# -gt 0 ]]; then
    packages=("$@")
else
    packages=("${DEFAULT_PACKAGES[@]}")
fi

missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
        missing+=("$pkg")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "deps: all ${#packages[@]} packages installed"
    exit 0
fi

echo "deps: missing packages: ${missing[*]}"

if [[ "$(id -u)" -eq 0 ]]; then
    export DEBIAN_FRONTEND=noninteractive
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    # Quiet on success; on failure show apt's full output (errors + context).
    run_apt() {
        if ! apt-get -q -o Dpkg::Use-Pty=0 "$@" >"$log" 2>&1; then
            cat "$log" >&2
            echo "deps: 'apt-get $*' failed" >&2
            exit 1
        fi
        grep -E '^(W|E):' "$log" >&2 || true
    }
    echo "deps: apt-get update"
    run_apt update
    echo "deps: apt-get install ${missing[*]}"
    run_apt install -y --no-install-recommends "${missing[@]}"
    echo "deps: installed ${missing[*]}"
else
    echo "deps: not root; install them with:" >&2
    echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi
