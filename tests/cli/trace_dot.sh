# --trace writes valid Chrome trace JSON; dot output is accepted by Graphviz;
# --stats prints per-stage counters; a failing sink exits 1 naming its path.
#   usage: trace_dot.sh SINEW SRC [main|trace_json|graphviz]
# `main` (the default) checks what needs only `sinew`. The checks that need
# another tool are their own ctest entries, which exit 77 (ctest: skipped)
# without it: `trace_json` (python3 reads the trace), `graphviz` (dot renders
# the DOT text).
source "$(dirname "$0")/common.sh" "$@"
part=${3:-main}
G="$SRC/graphs/image_pipeline.json"
case $part in
  trace_json)
    command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
    "$SINEW" run "$G" --set /source/count=5 --trace trace.json >out.txt 2>err.txt || fail "run: $(cat err.txt)"
    python3 - <<'PY' || fail "trace.json is not a valid trace"
import json
t = json.load(open("trace.json"))
ev = t["traceEvents"]
assert any(e.get("ph") == "M" for e in ev), "no thread names"
assert sum(1 for e in ev if e.get("ph") == "X") >= 15, "too few complete events"
PY
    echo "ok: trace.json is a Chrome trace"
    exit 0 ;;
  graphviz)
    command -v dot >/dev/null || { echo "SKIP: Graphviz's dot not found (apt-get install graphviz)"; exit 77; }
    "$SINEW" dot "$G" > g.dot || fail "dot failed"
    "$SINEW" dot --run "$G" --set /source/count=3 > g2.dot || fail "dot --run failed"
    dot -Tsvg g.dot > g.svg || fail "graphviz rejected the DOT text"
    dot -Tsvg g2.dot > g2.svg || fail "graphviz rejected the annotated DOT text"
    echo "ok: Graphviz renders both DOT texts"
    exit 0 ;;
  main) ;;
  *) fail "unknown part '$part' (main, trace_json, graphviz)" ;;
esac
"$SINEW" run "$G" --set /source/count=5 --stats --trace trace.json >out.txt 2>err.txt || fail "run: $(cat err.txt)"
grep -q "pipeline\[1\]/solarize" err.txt || fail "--stats lacks the farm stage: $(cat err.txt)"
grep -q "^latency" err.txt || fail "--stats lacks latency: $(cat err.txt)"
"$SINEW" dot "$G" > g.dot || fail "dot failed"
grep -q "digraph" g.dot || fail "no digraph: $(cat g.dot)"
"$SINEW" dot --run "$G" --set /source/count=3 > g2.dot || fail "dot --run failed"
"$SINEW" run "$G" --set /source/count=3 --set '/sink={"type":"file","path":"/dev/full"}' >out.txt 2>err.txt
rc=$?
[[ $rc -eq 1 ]] || fail "writing to /dev/full: exit $rc, want 1: $(cat err.txt)"
grep -q "/dev/full" err.txt || fail "the failing path is not named: $(cat err.txt)"
"$SINEW" kernels -v | grep -q "^saxpy" || fail "kernels lacks saxpy"
"$SINEW" devices | grep -q "^host:" || fail "devices lacks the host"
echo "ok: trace, dot, stats, sink failure"
# --progress prints periodic plain status lines when stderr is not a terminal.
"$SINEW" run "$SRC/graphs/image_pipeline.json" --set /source/count=12 --progress --progress-interval 0.05 \
  --set '/graph/pipeline/2={"map":"mirror"}' >out.txt 2>err.txt || fail "run --progress: $(cat err.txt)"
grep -q "^sinew: progress: \[#* *\] *[0-9]*% .*units/s .*MB/s .*queues" err.txt || fail "no progress lines: $(cat err.txt)"
echo "ok: progress lines"
# A memory budget too small for the units: exit 1, the stage and the limit named, no hang.
"$SINEW" run "$SRC/graphs/image_pipeline.json" --memory-limit 3 >out.txt 2>err.txt
rc=$?
[[ $rc -eq 1 ]] || fail "--memory-limit 3: exit $rc, want 1: $(cat err.txt)"
grep -q "memory limit of 3 MiB exceeded" err.txt || fail "no memory-limit error: $(cat err.txt)"
grep -q " failed units_in=" err.txt || fail "the summary does not say failed: $(cat err.txt)"
"$SINEW" run "$SRC/graphs/image_pipeline.json" --memory-limit 64 >out.txt 2>err.txt || fail "64 MiB is enough: $(cat err.txt)"
echo "ok: memory limit"
