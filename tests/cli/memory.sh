# An unbounded generator into a slow stage keeps memory bounded: resident
# size stays under a limit while the stream runs, and SIGINT drains it.
source "$(dirname "$0")/common.sh" "$@"
LIMIT_KB=$((400 * 1024))
"$SINEW" run "$SRC/tests/cli/slow_stream.json" >out.txt 2>err.txt &
pid=$!
wait_caught $pid INT
max=0
for i in $(seq 1 30); do
  sleep 0.1
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
  [[ ${rss:-0} -gt $max ]] && max=$rss
done
kill -INT $pid
wait $pid
rc=$?
[[ $rc -eq 130 ]] || fail "exit $rc, want 130: $(cat err.txt)"
check_drained err.txt
[[ $max -lt $LIMIT_KB ]] || fail "resident size reached $max KiB (limit $LIMIT_KB KiB)"
echo "ok: resident size at most $max KiB over 3 s of 4 MiB units; $(summary_counts err.txt)"
