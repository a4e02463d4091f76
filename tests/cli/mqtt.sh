# MQTT at QoS 1 is at least once end to end: a reader (tests/cli/mqtt_in.json)
# killed with SIGKILL mid-stream and started again under the same client id
# gets from the broker every message it had not acknowledged, so the two
# output files together hold every one of the 200 records the publisher sent
# (a record written just before the kill may come twice). The reader takes 2 ms
# a record (a delay map), so it is killed with most of the stream unread. Also the example
# graphs/mqtt_running_mean.json: readings in, per-sensor running means out.
# Skipped (77) without a mosquitto broker or when sinew was built without MQTT.
source "$(dirname "$0")/common.sh" "$@"
"$SINEW" validate "$SRC/tests/cli/mqtt_pub.json" >/dev/null 2>&1 || { echo "skip: built without MQTT"; exit 77; }
[[ -x /usr/sbin/mosquitto ]] || { echo "skip: no mosquitto broker"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
/usr/sbin/mosquitto -p "$port" >broker.log 2>&1 &
broker=$!
trap 'kill $broker 2>/dev/null; wait $broker 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null && break; sleep 0.05; done
P="--set /source/port=$port"
S="--set /sink/port=$port"

# 1. The reader subscribes (its session keeps the messages from now on), the publisher sends 200.
"$SINEW" run "$SRC/tests/cli/mqtt_in.json" $P --set /sink/path='"first.bin"' >/dev/null 2>err1.txt &
reader=$!
sleep 0.5
"$SINEW" run "$SRC/tests/cli/mqtt_pub.json" $S >pub.txt 2>&1 || fail "publish: $(cat pub.txt)"
# 2. Killed once it has written a few records (one message in flight at QoS 1: it is slow enough).
for _ in $(seq 400); do [[ -s first.bin && $(stat -c %s first.bin) -ge 320 ]] && break; sleep 0.005; done
kill -9 $reader
wait $reader 2>/dev/null
first=$(( $(stat -c %s first.bin) / 16 ))
[[ $first -lt 200 ]] || fail "the reader had every record before it was killed ($first): the test proves nothing"
# 3. Again under the same client id: the broker sends what was not acknowledged.
"$SINEW" run "$SRC/tests/cli/mqtt_in.json" $P --set /sink/path='"second.bin"' >/dev/null 2>err2.txt ||
  fail "the second reader: $(cat err2.txt)"
"$SINEW" run "$SRC/tests/cli/mqtt_pub.json" --set /sink='{"type": "file", "path": "sent.bin"}' >/dev/null 2>&1 ||
  fail "the reference records"
python3 - sent.bin first.bin second.bin <<'PY' || fail "records lost"
import sys
def recs(f):
    b = open(f, "rb").read()
    return [b[i:i + 16] for i in range(0, len(b), 16)]
sent, a, b = recs(sys.argv[1]), recs(sys.argv[2]), recs(sys.argv[3])
missing = set(sent) - set(a) - set(b)
print(f"ok: {len(sent)} sent; first run {len(a)}, second run {len(b)} (redelivered), "
      f"duplicates {len(a) + len(b) - len(set(a) | set(b))}, missing {len(missing)}")
sys.exit(1 if missing or len(set(sent)) != 200 else 0)
PY

# 4. The example: 8 sensors x 5 readings in, a running mean per sensor out.
"$SINEW" run "$SRC/graphs/mqtt_running_mean.json" --set /sources/readings/port=$port \
  --set /sources/readings/idle_timeout=2 --set /sinks/out/sink/port=$port >means.txt 2>&1 &
means=$!
sleep 0.5
python3 - "$port" <<'PY' || fail "the running means: $(cat means.txt)"
import socket, struct, sys, time
# A minimal MQTT 3.1.1 client (CONNECT, SUBSCRIBE, PUBLISH QoS 0): no client library in the test.
def pkt(t, body): 
    n, enc = len(body), b""
    while True:
        d, n = n % 128, n // 128
        enc += bytes([d | (128 if n else 0)])
        if not n: return bytes([t]) + enc + body
def s16(x): return struct.pack(">H", len(x)) + x
def conn(cid):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(pkt(0x10, s16(b"MQTT") + b"\x04\x02\x00\x3c" + s16(cid))); s.recv(4)
    return s
sub = conn(b"means-check"); sub.sendall(pkt(0x82, b"\x00\x01" + s16(b"means/+") + b"\x00")); sub.recv(5)
pub = conn(b"readings")
want = {}
for r in range(5):
    for sensor in range(8):
        v = float(sensor * 10 + r)
        want.setdefault(sensor, []).append(v)
        pub.sendall(pkt(0x30, s16(b"sensors/%d/reading" % sensor) + bytes([sensor]) + struct.pack("<f", v)))
got, buf, end = {}, b"", time.time() + 10
sub.settimeout(0.5)
while sum(len(x) for x in got.values()) < 40 and time.time() < end:
    try: buf += sub.recv(4096)
    except socket.timeout: continue
    while len(buf) >= 2:
        n, m, i = 0, 1, 1
        while buf[i] & 128: n += (buf[i] & 127) * m; m *= 128; i += 1
        n += (buf[i] & 127) * m; i += 1
        if len(buf) < i + n: break
        body, buf = buf[i:i + n], buf[i + n:]
        tl = struct.unpack(">H", body[:2])[0]; topic = body[2:2 + tl].decode(); payload = body[2 + tl:]
        got.setdefault(int(topic.split("/")[1]), []).append(struct.unpack("<f", payload[1:5])[0])
for sensor, vals in want.items():
    means = [sum(vals[:k + 1]) / (k + 1) for k in range(len(vals))]
    if got.get(sensor) != means: print("sensor", sensor, "got", got.get(sensor), "want", means); sys.exit(1)
print("ok: 8 sensors x 5 readings -> their running means, in order per sensor")
PY
wait $means
