# A dag file through the command line: validate, run (a checksum line per
# checksum sink; the scaled branch's equals the same tree run alone), the
# per-endpoint --stats lines, `dot` (junctions and named endpoints), and
# --verify (refused for a split by policy and a join), a join's unmatched units.
source "$(dirname "$0")/common.sh" "$@"
g="$SRC/tests/cli/diamond_dag.json"
"$SINEW" validate "$g" >out.txt 2>&1 || fail "validate: $(cat out.txt)"
grep -q 'a dag of .* sources in, sinks out, scaled_only' out.txt || fail "validate line: $(cat out.txt)"
"$SINEW" run "$g" --stats >out.txt 2>err.txt || fail "run: $(cat out.txt err.txt)"
grep -q '^checksum\[out\]=[0-9a-f]\{16\} units=64 ' out.txt || fail "no checksum of out: $(cat out.txt)"
dag_sum=$(sed -n 's/^checksum\[scaled_only\]=\([0-9a-f]*\) units=64 .*/\1/p' out.txt)
[[ -n $dag_sum ]] || fail "no checksum of scaled_only: $(cat out.txt)"
"$SINEW" run "$SRC/graphs/saxpy.json" --set 'source={"type": "generator", "buffers": ["f32"], "shape": [4096], "count": 64, "seed": 3}' \
  --set 'graph={"map": "scale", "args": {"k": 2}}' >tree.txt 2>err2.txt || fail "tree run: $(cat tree.txt err2.txt)"
grep -q "^checksum=$dag_sum " tree.txt || fail "the dag's scaled branch ($dag_sum) differs from the tree: $(cat tree.txt)"
grep -q '^sink scaled_only .* 64 units' err.txt || fail "--stats lacks the sinks: $(cat err.txt)"
grep -q 'units_in=64 units_out=128 ' err.txt || fail "summary: $(cat err.txt)"
"$SINEW" dot "$g" >dot.txt 2>&1 || fail "dot: $(cat dot.txt)"
grep -q 'shape=diamond, label="pair\\nzip"' dot.txt || fail "dot lacks the zip: $(cat dot.txt)"
grep -q 'source0 \[shape=ellipse, label="in"' dot.txt || fail "dot lacks the source: $(cat dot.txt)"
"$SINEW" dot "$g" --run >dot.txt 2>&1 || fail "dot --run: $(cat dot.txt)"
grep -q 'label="pair\\nzip\\nunits 128"' dot.txt || fail "dot --run lacks the zip's units: $(cat dot.txt)"
grep -q 'label="scaled_only\\nunits 64\\nbytes 1048576"' dot.txt || fail "dot --run lacks a sink's units: $(cat dot.txt)"
"$SINEW" run "$g" --verify >out.txt 2>err.txt || fail "run --verify: $(cat out.txt err.txt)"
grep -q '^verify: OK: 128 units' err.txt || fail "--verify: $(cat err.txt)"
# A split by policy cannot be followed by a sequential reference: refused.
"$SINEW" run "$g" --verify --set '/nodes/spread={"split": "in", "ways": 2}' \
  --set '/nodes/sum/input="pair"' --set '/sinks/more={"input": "spread:0", "sink": {"type": "null"}}' \
  --set '/sinks/less={"input": "spread:1", "sink": {"type": "null"}}' >out.txt 2>err.txt
[[ $? -ne 0 ]] || fail "--verify with a split by policy: want a failure"
grep -q "split 'spread' sends units where queues have room" err.txt || fail "--verify message: $(cat err.txt)"
# A join by key: 2x and x*x of random values never share a key, so every
# unit is dropped, counted in --stats and named in the summary.
join='/nodes/pair={"join": ["scaled", "squared"], "key": {"buffer": 0, "element": 0}}'
"$SINEW" run "$g" --stats --set "$join" >out.txt 2>err.txt || fail "run with a join: $(cat out.txt err.txt)"
grep -q "^checksum\[out\]=[0-9a-f]\{16\} units=0 " out.txt || fail "join: units reached out: $(cat out.txt)"
grep -q "unmatched = 128" err.txt || fail "--stats lacks the join's unmatched units: $(cat err.txt)"
grep -q "sinew: join 'pair': 128 unit(s) without a match dropped" err.txt || fail "summary lacks the join: $(cat err.txt)"
"$SINEW" dot "$g" --set "$join" >dot.txt 2>&1 || fail "dot with a join: $(cat dot.txt)"
grep -q 'shape=diamond, label="pair\\njoin"' dot.txt || fail "dot lacks the join: $(cat dot.txt)"
"$SINEW" dot "$g" --run --set "$join" >dot.txt 2>&1 || fail "dot --run with a join: $(cat dot.txt)"
grep -q 'label="pair\\njoin\\nunits 128\\nunmatched 128"' dot.txt || fail "dot --run lacks the join's unmatched units: $(cat dot.txt)"
"$SINEW" run "$g" --verify --set "$join" >out.txt 2>err.txt
[[ $? -ne 0 ]] || fail "--verify with a join: want a failure"
grep -q "join 'pair' pairs units in the order its inputs deliver them" err.txt || fail "--verify join message: $(cat err.txt)"
echo "ok: dag file validated, run, verified, drawn; its branch equals the tree; a join counted what it dropped"
