# Distributed farms and maps under mpirun (docs/distributed.md), 3 ranks on
# loopback: every example graph with its farm or map marked distributed gives
# the single-process checksum; a leaf that throws on one non-zero rank fails
# the run naming the rank and the node, with every rank exiting; SIGINT to
# mpirun drains (units_in == units_out); the C++ API program (mpi::session,
# distributed()) matches one process. Usage: mpi.sh SINEW SRC PLUGIN [API_PROGRAM].
source "$(dirname "$0")/common.sh" "$@"
PLUGIN=$3
API=${4:-}
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"; exit 77; }
if "$SINEW" run --mpi "$SRC/graphs/series.json" 2>&1 | grep -q "built without MPI"; then
  echo "SKIP: this sinew was built without MPI (SINEW_MPI found no C++ MPI)"; exit 77
fi
MPIRUN=(mpirun --oversubscribe -np 3)
[[ $(id -u) -eq 0 ]] && MPIRUN+=(--allow-run-as-root)
# Containers: no shared-memory single copy (ptrace), TCP on loopback only.
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export SINEW_THREADS=2

checksum() { grep -o '^checksum=[0-9a-f]* units=[0-9]*' "$1"; }

# 1. Same checksum as one process. graph | override marking the node | more overrides
while IFS='|' read -r graph mark extra; do
  [[ -z $graph ]] && continue
  read -ra more <<<"$extra"
  "$SINEW" run "$SRC/graphs/$graph" "${more[@]}" </dev/null >one.txt 2>one.err || fail "$graph alone: $(cat one.err)"
  timeout 60 "${MPIRUN[@]}" "$SINEW" run "$SRC/graphs/$graph" --set "$mark=true" "${more[@]}" --stats </dev/null >mpi.txt 2>mpi.err ||
    fail "$graph under mpirun: exit $?: $(cat mpi.err)"
  a=$(checksum one.txt) b=$(checksum mpi.txt)
  [[ -n $a && $a == "$b" ]] || fail "$graph ($mark): one process '$a', 3 ranks '$b'"
  # The other ranks did part of the work.
  grep -Eq "mpi: rank [12]: ([1-9][0-9]* units|0 units, [1-9][0-9]* row ranges)" mpi.err ||
    fail "$graph: no work on ranks 1-2: $(grep mpi: mpi.err)"
  echo "ok: $graph with $mark: $b"
done <<'LIST'
series.json|/graph/distributed|
stream_farm.json|/graph/distributed|--set /source/count=64
stream_farm.json|/graph/distributed|--set /source/count=64 --set /graph/ordered=false
stream_farm.json|/graph/distributed|--set /source/count=32 --set /graph/farm/pipeline/0/distributed=true
saxpy.json|/graph/distributed|--set /source/shape/0=65536
image_pipeline.json|/graph/pipeline/1/distributed|--set /source/count=6
image_pipeline.json|/graph/pipeline/2/distributed|--set /source/count=6
segmentation.json|/graph/distributed|
nbody.json|/graph/for/distributed|--set /graph/iterations=3
LIST

# In-place nodes (layer 0 goes to the other rank and comes back): a
# distributed farm of a pipeline of them, then a distributed in-place map.
cat >inplace.json <<JSON
{"sinew": 1, "name": "inplace", "plugins": ["$PLUGIN"],
 "source": {"type": "generator", "buffers": ["u8"], "shape": [3000], "count": 30, "seed": 5},
 "graph": {"pipeline": [
   {"farm": {"pipeline": [{"map": "scale_in_place", "args": {"k": 7}}, {"map": "scale_in_place"}]}, "workers": 2, "distributed": true},
   {"map": "scale_in_place", "args": {"k": 2}, "distributed": true}]},
 "sink": {"type": "checksum"}}
JSON
"$SINEW" run inplace.json </dev/null >one.txt 2>one.err || fail "in-place alone: $(cat one.err)"
timeout 60 "${MPIRUN[@]}" "$SINEW" run inplace.json --stats </dev/null >mpi.txt 2>mpi.err || fail "in-place under mpirun: $(cat mpi.err)"
a=$(checksum one.txt) b=$(checksum mpi.txt)
[[ -n $a && $a == "$b" ]] || fail "in-place: one process '$a', 3 ranks '$b'"
grep -Eq "mpi: rank [12]: [1-9][0-9]* units, [1-9][0-9]* row ranges" mpi.err || fail "in-place: $(grep mpi: mpi.err)"
echo "ok: in-place farm and map: $b"

# --trace: rank 0's trace holds a "remote" event per unit another rank ran.
timeout 60 "${MPIRUN[@]}" "$SINEW" run "$SRC/graphs/stream_farm.json" --set /source/count=24 --set /graph/distributed=true \
  --trace t.json </dev/null >out.txt 2>err.txt || fail "--trace under mpirun: $(cat err.txt)"
remote=$(grep -o '"cat":"remote"[^}]*"args":{"rank":[12],' t.json | wc -l)
[[ $remote -gt 0 ]] || fail "--trace: no remote events of ranks 1-2 in the trace"
echo "ok: --trace: $remote remote events"

# 2. A leaf that throws on rank 2 only (farm) / rank 1 only (map).
for where in "farm:2" "map:1"; do
  kind=${where%%:*} rank=${where##*:}
  if [[ $kind == farm ]]; then
    node='{"farm": {"map": "throw_on_rank", "args": {"rank": '$rank'}}, "workers": 1, "distributed": true}'
  else
    node='{"map": "throw_on_rank", "args": {"rank": '$rank'}, "distributed": true}'
  fi
  cat >throw.json <<JSON
{"sinew": 1, "name": "throw", "plugins": ["$PLUGIN"],
 "source": {"type": "generator", "buffers": ["u8"], "shape": [4096], "count": 64},
 "graph": $node, "sink": {"type": "checksum"}}
JSON
  timeout 60 "${MPIRUN[@]}" "$SINEW" run throw.json >out.txt 2>err.txt
  rc=$?
  [[ $rc -ne 124 ]] || fail "$kind: a rank hung after the failure on rank $rank"
  [[ $rc -ne 0 ]] || fail "$kind: exit 0 although rank $rank threw: $(cat err.txt)"
  grep -q "run failed: .*rank $rank: .*throw_on_rank.*: thrown on rank $rank" err.txt ||
    fail "$kind: the error does not name the rank and the node: $(cat err.txt)"
  echo "ok: $kind leaf throwing on rank $rank: exit $rc: $(grep -o 'run failed: .*' err.txt)"
done

# 3. SIGINT to mpirun while a slow unbounded stream runs: rank 0 drains.
cat >slow.json <<'JSON'
{"sinew": 1, "name": "slow",
 "source": {"type": "generator", "buffers": ["u8"], "shape": [4096], "count": "unbounded"},
 "graph": {"farm": {"map": "delay", "args": {"micros": 3000}}, "workers": 1, "distributed": true},
 "sink": {"type": "checksum"}}
JSON
# mpirun itself gets the signal (Open MPI turns it into SIGTERM for every
# rank: rank 0 drains, the serving ranks wait for it).
"${MPIRUN[@]}" "$SINEW" run slow.json --stats --progress --progress-interval 0.2 </dev/null >out.txt 2>err.txt &
pid=$!
(sleep 60; kill -KILL $pid) >/dev/null 2>&1 &  # no pipe of ours held open
watchdog=$!
# Signal once units flow (mpirun may take a while to start the ranks).
for ((i = 0; i < 150; ++i)); do
  grep -q "sinew: progress: [1-9]" err.txt && break
  sleep 0.2
done
sleep 1
kill -INT $pid
wait $pid
rc=$?
kill $watchdog 2>/dev/null
[[ $rc -ne 137 ]] || fail "SIGINT: mpirun did not end within 60 s: $(cat err.txt)"
grep -q "interrupted, drained" err.txt || fail "SIGINT: no drain summary (exit $rc): $(cat err.txt)"
check_drained err.txt
grep -Eq "mpi: rank [12]: [1-9][0-9]* units" err.txt || fail "SIGINT: ranks 1-2 ran nothing: $(cat err.txt)"
echo "ok: SIGINT -> exit $rc, $(summary_counts err.txt)"

# 4. The C++ API: sinew-mpi-scaling check (distributed farm and map vs one process).
if [[ -n $API ]]; then
  timeout 60 "${MPIRUN[@]}" "$API" check </dev/null >out.txt 2>err.txt || fail "C++ API check: exit $?: $(cat out.txt err.txt)"
  grep -q "check: farm OK .* series OK" out.txt || fail "C++ API check: $(cat out.txt err.txt)"
  echo "ok: C++ API: $(grep check: out.txt)"
fi
