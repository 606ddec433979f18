# The two commands of the quick start, and a few for developers.
#   make run    build optimized, start the gateway over the simulated 4-GPU demo fleet
#   make check  build with ASan+UBSan, run every test (what CI runs)
#   make install PREFIX=...  the binary, man pages, systemd unit, examples
#   make check-agents  codex exec and claude -p against the gateway (npm downloads; not in CI)
.PHONY: all setup build run check check-agents test-build install fuzz format clean

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
	@cmake -S . -B build-check -G Ninja -DSWITCHYARD_SANITIZE=ON -DCMAKE_UNITY_BUILD=ON >/dev/null
	@cmake --build build-check

# make install PREFIX=/opt/switchyard (default /usr/local; DESTDIR for packaging)
PREFIX ?= /usr/local
install: build
	@cmake --install build --prefix $(PREFIX)

check: test-build
	cd build-check && ctest --output-on-failure --timeout 600

check-agents: build
	scripts/check-agents build/switchyard

# libFuzzer targets (clang-14): the GGUF reader, the HTTP request parser, the
# head parser against Beast's (differential), the
# server with a handler over loopback, the SSE splitter, the chunked body
# decoder, the JSON scan and request inspector, the fleet config loader.
# Each runs FUZZ_SECONDS; new inputs are kept in build-fuzz/corpus/<target>.
#   make fuzz FUZZ_TARGETS=sse FUZZ_SECONDS=300
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= gguf http_request http_head http_server sse body_decoder json_scan config
FUZZ_CXX = clang++-14 -std=c++20 -g -O1 -Isrc
# clang 14 fails to emit UBSan's checks in coroutines ("Cannot represent a
# difference across sections"), so the server's target runs with ASan only.
FUZZ_SANITIZE = -fsanitize=fuzzer,address,undefined
fuzz_sources_gguf = src/plan/gguf_reader.cpp src/plan/ggml_types.cpp src/plan/gguf_model.cpp \
  src/plan/model_facts.cpp src/plan/kv_math.cpp -lfmt
fuzz_sources_http_request = src/http/parsers.cpp src/http/head_parser.cpp src/http/body_decoder.cpp \
  src/http/message.cpp
# The server's with Asio compiled as the product compiles it (asio_impl.cpp:
# its descriptor states in a slab, freed at the heap trim).
fuzz_sources_http_server = src/http/server.cpp $(fuzz_sources_http_request) \
  src/http/client_watch.cpp src/http/socket_deadline.cpp src/http/wire.cpp src/http/heap_trim.cpp \
  src/http/asio_impl.cpp src/http/slab.cpp src/common/block_cache.cpp \
  -DBOOST_ASIO_SEPARATE_COMPILATION -DBOOST_BEAST_SEPARATE_COMPILATION -DBOOST_ASIO_NO_DEPRECATED \
  -DBOOST_ASIO_DISABLE_AWAITABLE_FRAME_RECYCLING -DBOOST_ASIO_DISABLE_SMALL_BLOCK_RECYCLING \
  -lspdlog -lfmt
fuzz_sources_sse = src/http/sse.cpp
fuzz_sources_body_decoder = src/http/body_decoder.cpp
fuzz_sources_json_scan = src/openai/json_scan.cpp src/openai/request_inspector.cpp \
  src/openai/messages_checks.cpp -lsimdjson -lfmt
fuzz_sources_config = src/config/fleet_config.cpp src/tenancy/redis_url.cpp src/tenancy/key_limits.cpp \
  src/http/url.cpp \
  -lyaml-cpp -lfmt
fuzz: setup
	@mkdir -p build-fuzz
	@for t in $(FUZZ_TARGETS); do \
	  san="$(FUZZ_SANITIZE)"; \
	  case $$t in gguf) srcs="$(fuzz_sources_gguf)";; http_request|http_head) srcs="$(fuzz_sources_http_request)";; \
	    http_server) srcs="$(fuzz_sources_http_server)"; san="-fsanitize=fuzzer,address";; \
	    sse) srcs="$(fuzz_sources_sse)";; body_decoder) srcs="$(fuzz_sources_body_decoder)";; \
	    json_scan) srcs="$(fuzz_sources_json_scan)";; \
	    config) srcs="$(fuzz_sources_config)";; *) echo "unknown fuzz target $$t"; exit 2;; esac; \
	  echo "building build-fuzz/$${t}_fuzz"; \
	  $(FUZZ_CXX) $$san tests/fuzz/$${t}_fuzz.cpp $$srcs -o build-fuzz/$${t}_fuzz || exit 1; \
	done
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t; \
	  build-fuzz/$${t}_fuzz -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=512 -malloc_limit_mb=64 \
	    -max_len=8192 -print_final_stats=1 build-fuzz/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf build build-check build-fuzz
