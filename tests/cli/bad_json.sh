# Every file of the malformed corpus: exit 2 from validate and run, the
# message names the JSON pointer (or line:column), and run executes nothing
# (the corpus' sink writes out.bin, which must not appear).
source "$(dirname "$0")/common.sh" "$@"
n=0
while IFS=$'\t' read -r file where text; do
  [[ -z $file || $file == \#* ]] && continue
  for cmd in validate run; do
    "$SINEW" $cmd "$SRC/tests/json_bad/$file" >out.txt 2>err.txt
    rc=$?
    [[ $rc -eq 2 ]] || fail "$cmd $file: exit $rc, want 2: $(cat err.txt)"
    grep -qF -- "$where" err.txt || fail "$cmd $file: message lacks '$where': $(cat err.txt)"
    grep -qF -- "$text" err.txt || fail "$cmd $file: message lacks '$text': $(cat err.txt)"
    [[ ! -e out.bin ]] || fail "$cmd $file: wrote out.bin although the file is invalid"
  done
  n=$((n + 1))
done < "$SRC/tests/json_bad/expected.tsv"
[[ $n -ge 30 ]] || fail "only $n malformed files"
# Usage errors are exit 2 as well.
"$SINEW" run >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "run without a file: want exit 2"
"$SINEW" run "$SRC/graphs/saxpy.json" --set nonsense >/dev/null 2>err.txt; [[ $? -eq 2 ]] || fail "--set without '=': want exit 2"
"$SINEW" run no_such_file.json >/dev/null 2>err.txt; [[ $? -eq 2 ]] || fail "missing file: want exit 2"
grep -q "no_such_file.json" err.txt || fail "missing file not named: $(cat err.txt)"
echo "ok: $n malformed files rejected with exit 2 and their pointer"
