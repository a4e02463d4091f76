# SIGINT at a random moment while an unbounded stream runs: exit 130, every
# unit accepted from the source is delivered (units_in == units_out). Then
# SIGTERM the same way.
source "$(dirname "$0")/common.sh" "$@"
for sig in INT INT TERM; do
  "$SINEW" run "$SRC/graphs/stream_farm.json" --set /source/shape/0=16384 >out.txt 2>err.txt &
  pid=$!
  wait_caught $pid $sig
  sleep "0.$((RANDOM % 9 + 2))"
  kill -$sig $pid
  wait $pid
  rc=$?
  [[ $rc -eq 130 ]] || fail "SIG$sig: exit $rc, want 130: $(cat err.txt)"
  grep -q "interrupted, drained" err.txt || fail "no drain summary: $(cat err.txt)"
  check_drained err.txt
  # The checksum printed covers exactly the units delivered.
  units=$(grep -o '^checksum=[0-9a-f]* units=[0-9]*' out.txt | grep -o '[0-9]*$')
  [[ "units_out=$units" == "$(summary_counts err.txt | grep -o 'units_out=[0-9]*')" ]] ||
    fail "checksum covers $units units: $(cat out.txt err.txt)"
  echo "ok: SIG$sig -> $(summary_counts err.txt)"
done

# SIGTERM under heavy load: workers oversubscribed 8 to a core, a 16-way farm
# of xor+segmentation pipelines on 1 MiB units, every worker busy when the
# signal lands. Still a drain: exit 130, units_in == units_out.
threads=$(( $(nproc) * 8 ))
"$SINEW" run "$SRC/graphs/stream_farm.json" --threads "$threads" --set /source/shape/0=1048576 \
  --set /graph/workers=16 --set /queue_capacity=8 >out.txt 2>err.txt &
pid=$!
wait_caught $pid TERM
sleep 1.5
kill -TERM $pid
wait $pid
rc=$?
[[ $rc -eq 130 ]] || fail "SIGTERM under load: exit $rc, want 130: $(cat err.txt)"
check_drained err.txt
echo "ok: SIGTERM under load ($threads threads) -> $(summary_counts err.txt)"

# SIGINT while a live stream of text lines waits for more (the writer keeps
# the pipe open): the lines read so far were batched, every one of them is
# written (reversed) before exit 130, and records_in == records_out.
mkfifo in.fifo
"$SINEW" run "$SRC/tests/cli/stdin_lines_reverse.json" < in.fifo > lines_out.txt 2> lines_err.txt &
pid=$!
exec 3> in.fifo
seq 1 200000 >&3
wait_caught $pid INT
sleep 1
kill -INT $pid
wait $pid
rc=$?
exec 3>&-
[[ $rc -eq 130 ]] || fail "lines: exit $rc, want 130: $(cat lines_err.txt)"
check_drained lines_err.txt
grep -q 'records_in=200000 records_out=200000' lines_err.txt || fail "lines: records not all through: $(cat lines_err.txt)"
units=$(summary_counts lines_err.txt | grep -o 'units_out=[0-9]*'); units=${units#units_out=}
[[ $units -lt 200000 ]] || fail "lines were not batched: $(cat lines_err.txt)"
seq 1 200000 | rev | cmp -s - lines_out.txt || fail "lines: the output is not every line reversed"
echo "ok: SIGINT on a live line stream -> $(summary_counts lines_err.txt), 200000 records"
