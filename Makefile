# The two commands of the quick start, and a few for developers.
#   make run    build optimized, start the gateway over the simulated 4-GPU demo fleet
#   make check  build with ASan+UBSan, run every test (what CI runs)
.PHONY: all setup build run check test-build fuzz format clean

# ccache across checkouts (CI builds a fresh clone) and with precompiled headers.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime

all: build

setup:
	@scripts/setup

build: setup
	@cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWITCHYARD_TESTS=OFF >/dev/null
	@cmake --build build --target switchyard

run: build
	build/switchyard serve -c examples/sim-demo.yaml

test-build: setup
	@cmake -S . -B build-check -G Ninja -DSWITCHYARD_SANITIZE=ON >/dev/null
	@cmake --build build-check

check: test-build
	cd build-check && ctest --output-on-failure --timeout 600

# libFuzzer on the GGUF reader (clang-14), new inputs kept in build-fuzz/corpus.
FUZZ_SECONDS ?= 60
fuzz: setup
	@mkdir -p build-fuzz/corpus
	clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
	  tests/fuzz/gguf_fuzz.cpp src/plan/gguf_reader.cpp src/plan/ggml_types.cpp \
	  src/plan/gguf_model.cpp src/plan/model_facts.cpp src/plan/kv_math.cpp -lfmt \
	  -o build-fuzz/gguf_fuzz
	build-fuzz/gguf_fuzz -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=512 -malloc_limit_mb=64 \
	  -max_len=8192 build-fuzz/corpus tests/fuzz/corpus/gguf

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf build build-check build-fuzz
