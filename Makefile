# The two commands of the quick start, and a few for developers.
#   make run    build optimized, start the gateway over the simulated 4-GPU demo fleet
#   make check  build with ASan+UBSan, run every test (what CI runs)
.PHONY: all setup build run check test-build format clean

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

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf build build-check
