# ZeroMQ between two `sinew run` processes: tests/cli/zmq_push.json PUSHes
# 500 frames to graphs/zmq_farm.json (PULL -> ordered farm -> file), which ends
# at its idle timeout; its file equals the same stages run from the generator
# directly, and its summary reports the messages. Then a malformed frame
# (another layout) fails the reader naming the endpoint and the message.
# Skipped (77) when sinew was built without ZeroMQ.
source "$(dirname "$0")/common.sh" "$@"
"$SINEW" validate "$SRC/tests/cli/zmq_push.json" >/dev/null 2>&1 || { echo "skip: built without ZeroMQ"; exit 77; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ep="\"tcp://127.0.0.1:$port\""

"$SINEW" run "$SRC/graphs/zmq_farm.json" --stats --set /source/endpoint="$ep" --set /source/idle_timeout=1 \
  --set /sink/path='"out.bin"' >out.txt 2>err.txt &
reader=$!
"$SINEW" run "$SRC/tests/cli/zmq_push.json" --set /sink/endpoint="$ep" >push.txt 2>&1 || fail "push: $(cat push.txt)"
wait $reader || fail "reader: exit $?: $(cat err.txt)"
grep -q "500 messages" err.txt || fail "no message count in the summary: $(cat err.txt)"

# The reference: the generator straight into the same stages.
"$SINEW" run "$SRC/tests/cli/zmq_push.json" --set /graph='{"map": "scale", "args": {"k": 2}}' \
  --set /sink='{"type": "file", "path": "ref.bin"}' >ref.txt 2>&1 || fail "reference: $(cat ref.txt)"
[[ $(stat -c %s out.bin) -eq $((500 * 4096)) ]] || fail "out.bin holds $(stat -c %s out.bin) bytes"
cmp -s out.bin ref.bin || fail "out.bin differs from the reference"
echo "ok: 500 frames PUSH -> PULL -> farm -> file, byte-exact"

"$SINEW" run "$SRC/graphs/zmq_farm.json" --set /source/endpoint="$ep" --set /source/idle_timeout=1 \
  --set /sink/path='"bad.bin"' >out.txt 2>err.txt &
reader=$!
"$SINEW" run "$SRC/tests/cli/zmq_push.json" --set /sink/endpoint="$ep" --set /source/shape='[1000]' \
  --set /source/count=1 >push.txt 2>&1 || fail "push: $(cat push.txt)"
wait $reader
rc=$?
[[ $rc -ne 0 ]] || fail "a malformed frame was accepted"
grep -q "zmq pull tcp://127.0.0.1:$port: message 0 is not a record: 4000 bytes where a record of the layout f32 \[1024\] has 4096" err.txt ||
  fail "the error does not name the endpoint and the message: $(cat err.txt)"
echo "ok: a malformed frame fails the reader (exit $rc) naming the endpoint and the message"
