# Every example in graphs/ (trees and dags) validates, runs and equals its sequential
# reference through `sinew run --verify` (those that read a live source only validate).
source "$(dirname "$0")/common.sh" "$@"
n=0
for g in "$SRC"/graphs/*.json; do
  name=$(basename "$g")
  [[ $name == schema.json ]] && continue
  if grep -q '"type": "\(zmq\|mqtt\)"' "$g"; then
    # A live source (a ZeroMQ socket, an MQTT subscription) cannot be read twice for --verify:
    # tests/cli/zmq.sh and mqtt.sh run them. A build without the component does not know the type.
    grep -q '"type": "zmq"' "$g" && probe=zmq_push.json || probe=mqtt_pub.json
    "$SINEW" validate "$SRC/tests/cli/$probe" >/dev/null 2>&1 || continue
    "$SINEW" validate "$g" >out.txt 2>&1 || fail "validate $name: $(cat out.txt)"
    n=$((n + 1))
    continue
  fi
  "$SINEW" validate "$g" >out.txt 2>&1 || fail "validate $name: $(cat out.txt)"
  sets=()
  [[ $name == stream_farm.json ]] && sets=(--set /source/count=200)
  "$SINEW" run "$g" --verify "${sets[@]}" >out.txt 2>err.txt || fail "run $name: $(cat out.txt err.txt)"
  grep -q '^checksum\(\[[^]]*\]\)\?=[0-9a-f]\{16\} ' out.txt || fail "$name printed no checksum: $(cat out.txt)"
  grep -q '^verify: OK' err.txt || fail "$name did not verify: $(cat err.txt)"
  grep -q '"sources"' "$g" || check_drained err.txt  # a dag's sinks may get a unit twice
  n=$((n + 1))
done
[[ $n -ge 6 ]] || fail "only $n graphs"
echo "ok: $n graphs validated, ran and verified"
