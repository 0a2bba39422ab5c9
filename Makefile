# The verbs popper users type. Each builds what it needs.
#   make setup      install dependencies (Debian) and configure
#   make validate   check every contract in contracts/
#   make test       build and run every test (contract tests + harness unit tests, mutants, gate self-test)
#   make test-cpus  the CPU matrix: the tests natively and under qemu-user Nehalem and Haswell
#   make audit      run the tests, then write reports/coverage.{json,md} (SKIP_TESTS=1 reuses the last results)
#   make report     reports/index.html: audit, bench tables and the baselines' history on one self-contained page
#   make peak            measure this machine's FMA throughput and memory bandwidth
#   make bench-compare   three-tier benchmark of FAMILY (default gemm) on SHAPES (gate | full | names)
#   make bench-regression  CI gate: instruction counts of the gate shapes against baselines/ (or the base commit)
#   make bench-check     timed check of reports/bench-FAMILY.csv against BASELINE (interval verdicts)
#   make gpu-check  on a machine with a GPU: every device test and bench tier, declines forbidden
#   make bundle     build/popper-bundle.tar.xz: binaries, libraries and data to run gpu-check on a GPU machine
#   make fuzz       fuzz the full validate path (both profiles, text/json/sarif writers, migrate) for FUZZ_SECONDS (default 300)
#   make asan       build and run the tests under AddressSanitizer + UBSan
#   make consumer-check  install popper, build and test examples/consumer with find_package(popper)
#   make format     clang-format every tracked C, C++ and CUDA source in place (.clang-format)
#   make format-check  fail on any tracked source clang-format would change
#   make tidy       clang-tidy's bug-finding checks (.clang-tidy) over harness/ and tools/
# PRESET picks the CMake preset (default | ci | nocuda); CI uses PRESET=ci (warnings are errors).

PRESET ?= default
BUILD_DIR := $(if $(filter default ci,$(PRESET)),build,build-$(PRESET))
JOBS ?= 2
FUZZ_SECONDS ?= 300
FAMILY ?= gemm
GATE_FAMILY ?= all
WAIVERS := $(wildcard waivers.yaml)
SHAPES ?= gate
BENCH_ARGS ?=
POPPER := $(BUILD_DIR)/bin/popper

.PHONY: setup configure build validate test test-cpus test-run audit report graph fuzz asan clean gpu-check bundle bundle-check consumer-check \
        peak bench-compare bench-baseline bench-check bench-regression bench-gate-baseline bench-gate-selftest bench-check-selftest parity \
        format format-check tidy

setup:
	scripts/install-deps.sh
	cmake --preset $(PRESET)

$(BUILD_DIR)/CMakeCache.txt:
	cmake --preset $(PRESET)

configure: $(BUILD_DIR)/CMakeCache.txt

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

validate: configure
	cmake --build $(BUILD_DIR) -j$(JOBS) --target popper
	$(POPPER) validate contracts

# Tests run JOBS at a time; the few that time a step (the budget contract,
# the Jidoka demo) are RUN_SERIAL, so load from their neighbours cannot move them.
test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS) -LE cpu-matrix

# The CPU matrix: the test binaries as other CPUs run them (qemu-user), beside
# the native run, each kernel picking its own path. Legs: POPPER_CPU_MODELS.
# The native leg runs alone: it times the budget contract's training step
# inside its one test process (two legs at once stopped a clean run of
# FALSIFY-BUDGET-003 under qemu Nehalem twice). The emulated legs leave those
# tests out and run side by side, each one qemu process.
test-cpus: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j2 -L cpu-matrix

# Runs the tests but keeps going on failure, so the audit can report it.
test-run: build
	-ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS) -LE cpu-matrix

# The audit runs every test under each of its mutants (--mutants) and exits 1
# on any failure its report lists (waivers: waivers.yaml, id + reason + expiry).
# Results of the CPU-matrix legs (make test-cpus), when present, join the
# evidence: per obligation, which CPU paths passed where. The bench mutants'
# results (ctest bench_mutants_<family>) give the benchmarks' power.
# Where make test's own audit (ctest contract_audit) already ran every test
# under each of its mutants, with this build's binaries and these contracts,
# its results are reused rather than run again (60-80 s on a 2-core runner);
# they are copied to reports/mutants.json, where a run would write them.
CPU_LEGS = $(wildcard $(BUILD_DIR)/results/cpu-*-contract_tests.json)
CPU_MUTANTS = $(wildcard $(BUILD_DIR)/results/cpu-*-mutants.json)
BENCH_MUTANTS = $(wildcard $(BUILD_DIR)/results/bench-mutants-*.json)
TEST_MUTANTS := $(BUILD_DIR)/results/audit/mutants.json
REUSED_MUTANTS = $(shell [ $(TEST_MUTANTS) -nt $(BUILD_DIR)/bin/popper_contract_tests ] && \
  [ $(TEST_MUTANTS) -nt $(POPPER) ] && [ -z "$$(find contracts -name '*.yaml' -newer $(TEST_MUTANTS))" ] && \
  echo $(TEST_MUTANTS))
audit: $(if $(SKIP_TESTS),build,test-run)
	$(if $(REUSED_MUTANTS),@echo "audit: reusing make test's mutant results ($(REUSED_MUTANTS))" && mkdir -p reports && \
	  cp $(REUSED_MUTANTS) reports/.mutants.json.part && mv reports/.mutants.json.part reports/mutants.json)
	$(POPPER) audit --contracts contracts $(if $(REUSED_MUTANTS),,--mutants) \
	  --results $(BUILD_DIR)/results/contract_tests $(CPU_LEGS) \
	  $(if $(CPU_MUTANTS)$(REUSED_MUTANTS),--mutant-results $(CPU_MUTANTS) $(REUSED_MUTANTS)) \
	  $(if $(BENCH_MUTANTS),--bench-mutant-results $(BENCH_MUTANTS)) \
	  --test-binary $(BUILD_DIR)/bin/popper_contract_tests \
	  $(if $(wildcard reports/bench-claims.json),--bench-claims reports/bench-claims.json) \
	  $(if $(WAIVERS),--waivers $(WAIVERS)) \
	  -o reports

# One page over what is in reports/ (audit, bench tables) and the committed
# baselines' git history; checked in headless Chromium by scripts/report-check.sh.
report: build
	$(POPPER) report html --reports reports --baselines baselines -o reports/index.html

graph: validate
	$(POPPER) graph contracts --format mermaid

peak: build
	$(POPPER) peak

parity: build
	$(POPPER) parity --drift --drift-out reports --json reports/parity-gate.json $(PARITY_ARGS)

bench-compare: build
	$(POPPER) bench compare --family $(FAMILY) --shapes $(SHAPES) --out reports $(BENCH_ARGS)

bench-baseline: bench-compare
	$(POPPER) bench baseline save --from reports/bench-$(FAMILY).csv

# Timed comparison against a saved baseline: make bench-check BASELINE=baselines/<fp>/gemm.csv
bench-check: build
	$(POPPER) bench check --baseline $(BASELINE) --current reports/bench-$(FAMILY).csv --rerun

# The committed baseline for this build's gate key when there is one, else the
# base commit (the last one that changed baselines/) built and measured now.
bench-regression: build
	$(POPPER) bench gate --family $(GATE_FAMILY) --against auto

bench-gate-baseline: build
	for f in $$(if [ "$(GATE_FAMILY)" = all ]; then ls bench/*/family.yaml | xargs -n1 dirname | xargs -n1 basename; else echo $(GATE_FAMILY); fi); do \
	  $(POPPER) bench gate --family $$f --no-check --out reports/bench-$$f-gate.csv && \
	  $(POPPER) bench baseline save --from reports/bench-$$f-gate.csv || exit 1; done

bench-gate-selftest: build
	scripts/bench-gate-selftest.sh $(BUILD_DIR) 10

# Routing threshold from the bench CSV (nsa: config/nsa-router.yaml, read by the NSA router).
MARGIN ?= 1.2
.PHONY: bench-threshold
bench-threshold: build
	$(POPPER) bench threshold --family $(FAMILY) --margin $(MARGIN) --csv reports/bench-$(FAMILY).csv

# The timed check's self-test (long; wants a quiet machine): clean pairs, injected 25% and 10%.
bench-check-selftest: build
	scripts/bench-check-selftest.sh $(BUILD_DIR) 10

# A machine with a GPU: device tests with declines forbidden, the audit with
# every mutant, popper peak --device and the GEMM device tiers
# (scripts/gpu-check.sh, the same script a bundle's run.sh runs). Exits 1
# without a device, and names every failure.
gpu-check: build
	scripts/gpu-check.sh --bin $(BUILD_DIR)/bin --data . --out reports/gpu-check

# One relocatable archive of the binaries, the libraries they load and the data
# they read, for a GPU machine that has only the driver and CUDA: build it
# here, unpack it there and run its run.sh (scripts/bundle.sh says what is in it).
bundle: build
	scripts/bundle.sh $(BUILD_DIR) $(BUILD_DIR)/popper-bundle.tar.xz

# The bundle as a GPU machine gets it, checked here: size, every library found
# inside it, and its contract tests run unpacked elsewhere with the sources hidden.
bundle-check: bundle
	scripts/bundle-check.sh $(BUILD_DIR)/popper-bundle.tar.xz . $(BUILD_DIR)

fuzz:
	cmake --preset fuzz
	cmake --build build-fuzz -j$(JOBS) --target popper_fuzz_contract
	mkdir -p build-fuzz/corpus
	cp tests/corpus/good/*.yaml tests/corpus/bad/*.yaml tests/corpus/pv/*.yaml contracts/*/*.yaml build-fuzz/corpus/
	find tests/corpus/fuzz -type f ! -name README.md -exec cp {} build-fuzz/corpus/ \;
	find tests/corpus/pv-public -name '*.yaml' -exec cp {} build-fuzz/corpus/ \;
	build-fuzz/bin/popper_fuzz_contract -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=build-fuzz/ build-fuzz/corpus

consumer-check:
	JOBS=$(JOBS) scripts/consumer-check.sh

asan:
	cmake --preset asan
	cmake --build build-asan -j$(JOBS)
	ctest --test-dir build-asan --output-on-failure -j$(JOBS)

# The tracked C, C++ and CUDA sources, formatted by .clang-format.
FORMAT_SOURCES = git ls-files -z '*.c' '*.h' '*.cc' '*.cpp' '*.hpp' '*.inl' '*.cu' '*.cuh'

format:
	$(FORMAT_SOURCES) | xargs -0 clang-format -i

format-check:
	$(FORMAT_SOURCES) | xargs -0 clang-format --dry-run -Werror

# With the build's compile commands (harness/fuzz has its own preset); any
# finding fails. gcc's -Wno-restrict is unknown to clang, hence the extra arg.
tidy: build
	git ls-files -z 'harness/*.cpp' 'tools/*.cpp' ':!harness/fuzz/*' | xargs -0 -n1 -P$(JOBS) clang-tidy --quiet \
	  -p $(BUILD_DIR) --extra-arg=-Wno-unknown-warning-option --warnings-as-errors='*'

clean:
	rm -rf build build-* reports/*.json reports/*.md reports/*.csv reports/*.svg
