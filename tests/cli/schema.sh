# graphs/schema.json is a valid JSON Schema and every example graph (and the
# test graphs) conforms to it. Needs python3 with jsonschema; skipped without.
source "$(dirname "$0")/common.sh" "$@"
if ! python3 -c "import jsonschema" 2>/dev/null; then
  echo "skipped: python3 jsonschema is not installed"
  exit 0
fi
python3 - "$SRC" <<'PY' || fail "schema check failed"
import glob, json, sys
import jsonschema
src = sys.argv[1]
schema = json.load(open(src + "/graphs/schema.json"))
jsonschema.Draft202012Validator.check_schema(schema)
files = [f for f in sorted(glob.glob(src + "/graphs/*.json")) if not f.endswith("schema.json")]
files += sorted(glob.glob(src + "/tests/cli/*.json"))
for f in files:
    jsonschema.validate(json.load(open(f)), schema, cls=jsonschema.Draft202012Validator)
print("ok: %d graph files conform to graphs/schema.json" % len(files))
PY
