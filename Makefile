# The verbs popper users type. Each builds what it needs.
#   make setup      install dependencies (Debian) and configure
#   make validate   check every contract in contracts/
#   make test       build and run every test (contract tests + harness unit tests)
#   make audit      run the tests, then write reports/coverage.{json,md} (SKIP_TESTS=1 reuses the last results)
#   make fuzz       run the contract-loader fuzzer for FUZZ_SECONDS (default 300)
#   make asan       build and run the tests under AddressSanitizer + UBSan
# PRESET picks the CMake preset (default | ci | nocuda); CI uses PRESET=ci (warnings are errors).

PRESET ?= default
BUILD_DIR := $(if $(filter default ci,$(PRESET)),build,build-$(PRESET))
JOBS ?= 2
FUZZ_SECONDS ?= 300
POPPER := $(BUILD_DIR)/bin/popper

.PHONY: setup configure build validate test test-run audit graph fuzz asan clean

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
