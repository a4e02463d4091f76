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
