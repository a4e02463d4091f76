# SIGINT at a random moment while an unbounded stream runs: exit 130, every
# unit accepted from the source is delivered (units_in == units_out). Then
# SIGTERM the same way.
source "$(dirname "$0")/common.sh" "$@"
for sig in INT INT TERM; do
  "$SINEW" run "$SRC/graphs/stream_farm.json" --set /source/shape/0=16384 >out.txt 2>err.txt &
  pid=$!
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
sleep 1.5
kill -TERM $pid
wait $pid
rc=$?
[[ $rc -eq 130 ]] || fail "SIGTERM under load: exit $rc, want 130: $(cat err.txt)"
check_drained err.txt
echo "ok: SIGTERM under load ($threads threads) -> $(summary_counts err.txt)"
