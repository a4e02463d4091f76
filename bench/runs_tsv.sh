# Sourced (bash) by the scripts that write bench/results/<N>core/: run_suite.sh,
# device_run.sh (copied into dev-carry/ by its prepare step) and mpi_scaling.sh.
# Every file of such a folder has one line in the folder's runs.tsv:
#   file <TAB> UTC date <TAB> build commit <TAB> command
# The build commit is the `build_commit` of the file's JSON (sinew-bench writes
# it; FILE.txt takes that of FILE.json beside it), else $BUILD_COMMIT (set by
# the caller from `sinew --version`), else "unknown".

# build_commit_of BUILD_DIR: the commit that build was made from (its
# generated sinew_build_commit.h, cmake/build_commit.cmake); empty if unknown.
build_commit_of() {
  sed -n 's/.*"\(.*\)".*/\1/p' "$1/generated/sinew_build_commit.h" 2>/dev/null
}

# log_header LOG COMMAND: starts LOG (a long check's output kept as evidence)
# with the command, the UTC date, $BUILD_COMMIT and the machine.
log_header() {
  {
    echo "# command: $2"
    echo "# date: $(date -u +%FT%TZ)"
    echo "# build_commit: ${BUILD_COMMIT:-unknown}"
    echo "# machine: $(nproc) cores, $(uname -sr)"
  } > "$1"
}

# record DIR COMMAND FILE...: COMMAND just wrote the FILEs (names in DIR); their
# lines replace those of the previous run. FILEs that do not exist are skipped.
record() {
  local dir=$1 cmd=$2 now f build
  shift 2
  now=$(date -u +%FT%TZ)
  for f in "$@"; do
    [[ -e $dir/$f ]] || continue
    build=$(sed -n 's/^ *"build_commit": "\(.*\)",$/\1/p' "$dir/${f%.*}.json" 2>/dev/null || true)
    printf '%s\t%s\t%s\t%s\n' "$f" "$now" "${build:-${BUILD_COMMIT:-unknown}}" "$cmd"
  done | merge_runs "$dir"
}

# merge_runs DIR < LINES: runs.tsv lines (a device run's runs.tsv, say) replace
# DIR/runs.tsv's lines of the same files; a header line is ignored. Holds a
# lock on DIR/.runs.lock, so checks logging in parallel (make fuzz) keep
# every line.
merge_runs() {
  local dir=$1 new
  new=$(awk -F'\t' 'NF > 1 && $1 != "file"')
  [[ -n $new ]] || return 0
  (
    flock 9
    # shellcheck disable=SC2046
    drop_lines "$dir" $(cut -f1 <<<"$new")
    printf '%s\n' "$new" >> "$dir/runs.tsv"
  ) 9> "$dir/.runs.lock"
}

# forget DIR FILE...: deletes the FILEs of an earlier run and their lines.
forget() {
  local dir=$1 f
  shift
  for f in "$@"; do rm -f "$dir/$f"; done
  drop_lines "$dir" "$@"
}

# drop_lines DIR FILE...: removes the FILEs' lines from DIR/runs.tsv (creating
# it, with its header line, when missing).
drop_lines() {
  local dir=$1
  shift
  [[ -f $dir/runs.tsv ]] || printf 'file\tutc_date\tbuild_commit\tcommand\n' > "$dir/runs.tsv"
  awk -F'\t' 'NR == FNR { gone[$0]; next } !($1 in gone)' <(printf '%s\n' "$@") "$dir/runs.tsv" \
    > "$dir/runs.tsv.new" && mv "$dir/runs.tsv.new" "$dir/runs.tsv"
}
