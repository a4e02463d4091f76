# Shared by the CLI tests: usage `source common.sh "$@"` with $1 = the sinew
# binary and $2 = the source tree. Runs in a fresh temporary directory.
set -u
SINEW=$1
SRC=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
# units_in / units_out from a run's stderr summary.
summary_counts() { grep -o 'units_in=[0-9]* units_out=[0-9]*' "$1" | tail -1; }
check_drained() {
  local line in out
  line=$(summary_counts "$1")
  [[ -n $line ]] || fail "no units_in/units_out summary in $(cat "$1")"
  in=${line#units_in=}; in=${in%% *}; out=${line##*units_out=}
  [[ $in == "$out" ]] || fail "units_in=$in != units_out=$out"
  [[ $in -gt 0 ]] || fail "no units went through"
}
# Waits until process $1 catches signal $2 (a name: INT, TERM), so that a
# kill lands on sinew's handler and not on a process still starting.
wait_caught() {
  local bit=$(( 1 << ($(kill -l "$2") - 1) )) mask i
  for ((i = 0; i < 600; i++)); do
    mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || mask=
    [[ -n $mask ]] && (( 0x$mask & bit )) && return 0
    sleep 0.05
  done
  fail "process $1 never caught SIG$2"
}
