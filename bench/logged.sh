#!/usr/bin/env bash
# Runs one long check and keeps its output as evidence (make stress, soak,
# asan, tsan-full, fuzz): LOG starts with the command, the UTC date and the
# commit the build in BUILD_DIR was made from (its generated
# sinew_build_commit.h, not the checkout's HEAD), then holds the command's
# output and its exit status; LOG's line in the folder's runs.tsv (file,
# date, build commit, command; bench/runs_tsv.sh) replaces the previous one.
#   usage: bash bench/logged.sh [-q] BUILD_DIR LOG COMMAND [ARG...]
# The output also goes to the terminal unless -q. $LOGGED_BY (e.g. "make
# stress") is recorded beside the command. Exit status: the command's.
set -uo pipefail
quiet=
if [[ ${1:-} == -q ]]; then
  quiet=1
  shift
fi
if [[ $# -lt 3 ]]; then
  echo "usage: bash bench/logged.sh [-q] BUILD_DIR LOG COMMAND [ARG...]" >&2
  exit 2
fi
build=$1 log=$2
shift 2
source "$(dirname "${BASH_SOURCE[0]}")/runs_tsv.sh"
BUILD_COMMIT=$(build_commit_of "$build")
BUILD_COMMIT=${BUILD_COMMIT:-unknown}
dir=$(dirname "$log")
mkdir -p "$dir" || exit 2
cmd=
for a in "$@"; do  # as a shell would read it back: quoted where needed
  [[ $a =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]] || a="'${a//\'/\'\\\'\'}'"
  cmd+="${cmd:+ }$a"
done
log_header "$log" "$cmd (build directory $build${LOGGED_BY:+; run by: $LOGGED_BY})"
if [[ -n $quiet ]]; then
  "$@" >> "$log" 2>&1
  rc=$?
else
  "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
fi
echo "# exit status: $rc, $(date -u +%FT%TZ)" >> "$log"
record "$dir" "${LOGGED_BY:+$LOGGED_BY: }$cmd" "$(basename "$log")"
exit "$rc"
