# Sinew convenience driver around CMake/CTest.
#   make test | run | bench | bench-quick | tsan | tsan-full | asan | asan-ci | fuzz | soak | stress | install | clean
# Extra CMake options: make CMAKE_FLAGS="-DSINEW_AVX2=ON" build
# Every configure compiles through ccache when it is installed (tools/install-deps.sh installs it).

BUILD       = build
BUILD_TYPE  = Release
PREFIX      = /usr/local
JOBS       := $(shell nproc)
CMAKE_FLAGS =

FUZZ_BUILD  = build-fuzz
FUZZ_SECONDS = 60
FUZZ_TARGETS = fuzz_graph_file fuzz_records fuzz_lines fuzz_ppm fuzz_tcp fuzz_zmq
TSAN_BUILD  = build-tsan
ASAN_BUILD  = build-asan
SAN_FLAGS   := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINEW_BUILD_BENCH=OFF
# Expanded when a recipe runs, after `deps` may have installed ccache.
LAUNCHER     = $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Paths relative to the checkout, so that another clone of the same sources
# (a CI run) finds the objects in the cache.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

# The long checks (stress, soak, asan, tsan-full, fuzz) keep their logs here,
# each starting with its command, date and build commit (bench/logged.sh),
# with a line in the folder's runs.tsv (bench/results/README.md).
RESULTS     := bench/results/$(shell nproc)core
# TESTS="[tag]" runs only those test cases under `make asan` / `make tsan-full`.
TESTS        =
LOGGED       = LOGGED_BY='make $@' bash bench/logged.sh

.PHONY: all deps configure build test run bench bench-quick tsan tsan-full asan asan-ci fuzz soak stress install clean

all: build

deps:
	@bash tools/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(LAUNCHER) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure --no-tests=error -j $(JOBS) -LE soak

run: build
	$(BUILD)/tools/sinew demo

# Every benchmark into bench/results/<N>core/ (one .json/.txt pair per process,
# replacing the machine's previous run; runs.tsv: command and build commit),
# then the plots into docs/img/ (bench/run_suite.sh).
bench: build
	bash bench/run_suite.sh $(BUILD)

# The same at --quick sizes into bench/results/quick-<N>core/ (git-ignored), no plots.
bench-quick: build
	bash bench/run_suite.sh $(BUILD) --quick

tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DSINEW_SANITIZE=thread $(SAN_FLAGS) $(LAUNCHER) $(CMAKE_FLAGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target sinew-tests
	# Graphs run on the `steal` scheduler here: Debian's oneTBB is not built
	# with ThreadSanitizer, so TSan cannot see the hand-offs inside libtbb and
	# reports them as races (tests/tsan.supp: only stacks through libtbb or
	# its inlined pool/partitioner). Our own scheduler is fully instrumented.
	SINEW_SCHEDULER=steal TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
		$(TSAN_BUILD)/tests/sinew-tests "[tsan]"

# The whole suite under TSan; reports inside the uninstrumented libtbb are
# suppressed. Log: $(RESULTS)/tsan-full.log.
tsan-full: deps
	cmake -S . -B $(TSAN_BUILD) -DSINEW_SANITIZE=thread $(SAN_FLAGS) $(LAUNCHER) $(CMAKE_FLAGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target sinew-tests
	$(LOGGED) $(TSAN_BUILD) $(RESULTS)/tsan-full.log env SINEW_SCHEDULER=steal \
		TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
		$(TSAN_BUILD)/tests/sinew-tests $(if $(TESTS),"$(TESTS)")

# Leak reports need whole stacks through the uninstrumented PoCL for
# tests/lsan.supp to match (fast unwinding stops at its first frame).
ASAN_RUN_OPTIONS = detect_leaks=1:fast_unwind_on_malloc=0
# The CI subset under ASan + UBSan: runtime, graph files, I/O, buffers, random trees.
# `~[.]`: a tag alone also selects hidden tests (the 10,000-tree stress).
ASAN_CI_TAGS = [runtime],[dag]~[.],[json],[io],[records],[buffer],[random]~[.],[stream],[balance],[delivery]
asan-ci: deps
	cmake -S . -B $(ASAN_BUILD) -DSINEW_SANITIZE=address $(SAN_FLAGS) $(LAUNCHER) $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target sinew-tests sinew_test_plugin
	ASAN_OPTIONS="$(ASAN_RUN_OPTIONS)" LSAN_OPTIONS="suppressions=$(CURDIR)/tests/lsan.supp" \
	UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
		$(ASAN_BUILD)/tests/sinew-tests "$(ASAN_CI_TAGS)"

# The whole suite under ASan + UBSan with leak checking. Log: $(RESULTS)/asan.log.
asan: deps
	cmake -S . -B $(ASAN_BUILD) -DSINEW_SANITIZE=address $(SAN_FLAGS) $(LAUNCHER) $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	$(LOGGED) $(ASAN_BUILD) $(RESULTS)/asan.log env ASAN_OPTIONS="$(ASAN_RUN_OPTIONS)" \
		LSAN_OPTIONS="suppressions=$(CURDIR)/tests/lsan.supp" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
		$(ASAN_BUILD)/tests/sinew-tests $(if $(TESTS),"$(TESTS)")

# The 10-minute stream soak (tests/test_soak.cpp); SOAK_SECONDS to shorten it.
# Log: $(RESULTS)/soak-<SOAK_SECONDS>s.txt.
SOAK_SECONDS = 600
soak: build
	$(LOGGED) $(BUILD) $(RESULTS)/soak-$(SOAK_SECONDS)s.txt env SINEW_SOAK_SECONDS=$(SOAK_SECONDS) \
		$(BUILD)/tests/sinew-tests "[.soak]"

# The hidden stress tests ("[.stress]": 10,000 random skeleton trees,
# tests/test_random_trees.cpp; 10,000 random dags, tests/test_dag_random.cpp;
# a million tasks on every policy). Log: $(RESULTS)/stress.log.
STRESS_TESTS = [.stress]
stress: build
	$(LOGGED) $(BUILD) $(RESULTS)/stress.log $(BUILD)/tests/sinew-tests "$(STRESS_TESTS)"

# libFuzzer over every parser, FUZZ_SECONDS each (clang), from tests/fuzz/corpus,
# one harness per core at a time.
# Logs: $(RESULTS)/fuzz-<harness>.log; findings in $(FUZZ_BUILD)/artifacts/.
fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=clang++ -DSINEW_FUZZ=ON \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINEW_BUILD_BENCH=OFF -DSINEW_TEST_DISCOVERY=OFF $(LAUNCHER) $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	LOGGED_BY='make fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)' FUZZ_JOBS=$(JOBS) \
		bash tests/fuzz/run_fuzz.sh $(FUZZ_BUILD)/fuzz $(FUZZ_SECONDS) $(FUZZ_BUILD)/artifacts $(RESULTS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build build-tsan build-asan build-fuzz
