# The verbs popper users type. Each builds what it needs.
#   make setup      install dependencies (Debian) and configure
#   make validate   check every contract in contracts/
#   make test       build and run every test (contract tests + harness unit tests)
#   make audit      run the tests, then write reports/coverage.{json,md} (SKIP_TESTS=1 reuses the last results)
#   make peak            measure this machine's FMA throughput and memory bandwidth
#   make bench-compare   three-tier benchmark of FAMILY (default gemm) on SHAPES (gate | full | names)
#   make bench-regression  CI gate: instruction counts of the gate shapes against baselines/
#   make fuzz       run the contract-loader fuzzer for FUZZ_SECONDS (default 300)
#   make asan       build and run the tests under AddressSanitizer + UBSan
# PRESET picks the CMake preset (default | ci | nocuda); CI uses PRESET=ci (warnings are errors).

PRESET ?= default
BUILD_DIR := $(if $(filter default ci,$(PRESET)),build,build-$(PRESET))
JOBS ?= 2
FUZZ_SECONDS ?= 300
FAMILY ?= gemm
SHAPES ?= gate
BENCH_ARGS ?=
POPPER := $(BUILD_DIR)/bin/popper

.PHONY: setup configure build validate test test-run audit graph fuzz asan clean \
        peak bench-compare bench-baseline bench-check bench-regression bench-gate-baseline bench-gate-selftest

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

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure

# Runs the tests but keeps going on failure, so the audit can report it.
test-run: build
	-ctest --test-dir $(BUILD_DIR) --output-on-failure

audit: $(if $(SKIP_TESTS),build,test-run)
	$(POPPER) audit --contracts contracts \
	  --results $(BUILD_DIR)/results/contract_tests.json \
	  --test-binary $(BUILD_DIR)/bin/popper_contract_tests \
	  $(if $(wildcard reports/bench-claims.json),--bench-claims reports/bench-claims.json) \
	  -o reports

graph: validate
	$(POPPER) graph contracts --format mermaid

peak: build
	$(POPPER) peak

bench-compare: build
	$(POPPER) bench compare --family $(FAMILY) --shapes $(SHAPES) --out reports $(BENCH_ARGS)

bench-baseline: bench-compare
	$(POPPER) bench baseline save --from reports/bench-$(FAMILY).csv

# Timed comparison against a saved baseline: make bench-check BASELINE=baselines/<fp>/gemm.csv
bench-check: build
	$(POPPER) bench check --baseline $(BASELINE) --current reports/bench-$(FAMILY).csv --rerun

bench-regression: build
	$(POPPER) bench gate --family $(FAMILY)

bench-gate-baseline: build
	$(POPPER) bench gate --family $(FAMILY) --no-check
	$(POPPER) bench baseline save --from reports/bench-$(FAMILY)-gate.csv

bench-gate-selftest: build
	scripts/bench-gate-selftest.sh $(BUILD_DIR) 10

# Routing threshold from the bench CSV (nsa: config/nsa-router.yaml, read by the NSA router).
MARGIN ?= 1.2
.PHONY: bench-threshold
bench-threshold: build
	$(POPPER) bench threshold --family $(FAMILY) --margin $(MARGIN) --csv reports/bench-$(FAMILY).csv

fuzz:
	cmake --preset fuzz
	cmake --build build-fuzz -j$(JOBS) --target popper_fuzz_contract
	mkdir -p build-fuzz/corpus
	cp tests/corpus/good/*.yaml tests/corpus/bad/*.yaml tests/corpus/pv/*.yaml contracts/*.yaml build-fuzz/corpus/
	build-fuzz/bin/popper_fuzz_contract -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	  -rss_limit_mb=2048 -print_final_stats=1 build-fuzz/corpus

asan:
	cmake --preset asan
	cmake --build build-asan -j$(JOBS)
	ctest --test-dir build-asan --output-on-failure

clean:
	rm -rf build build-* reports/*.json reports/*.md reports/*.csv reports/*.svg
