# graphs/schema.json is a valid JSON Schema and every example graph (and the
# test graphs) conforms to it. Needs a python3 with jsonschema (Debian's
# /usr/bin/python3 with python3-jsonschema, installed by tools/install-deps.sh;
# a python3 on PATH, e.g. pyenv's, often lacks it): without one, exit 77,
# which ctest reports as skipped (SKIP_RETURN_CODE). SINEW_SCHEMA_PYTHON
# names another interpreter (e.g. one without jsonschema, to see the skip).
source "$(dirname "$0")/common.sh" "$@"
py=
for cand in ${SINEW_SCHEMA_PYTHON:-/usr/bin/python3 python3}; do
  if "$cand" -c "import jsonschema" 2>/dev/null; then
    py=$cand
    break
  fi
done
if [[ -z $py ]]; then
  echo "SKIP: no python3 with jsonschema (apt-get install python3-jsonschema)"
  exit 77
fi
"$py" - "$SRC" <<'PY' || fail "schema check failed"
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
