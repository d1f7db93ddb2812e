# The two commands a newcomer needs (as root on Debian 12):
#   make demo   installs what is missing, builds, and runs grist on a bundled example model
#   make test   installs what is missing, builds, and runs every test (the command CI runs)
BUILD ?= build
JOBS ?= 2
GRIST := $(BUILD)/grist

# Debian packages the build and the tests need; see README.md for what each one is for.
DEBIAN_PACKAGES := g++ cmake ninja-build pkg-config ccache \
  libeigen3-dev libonnx-dev libprotobuf-dev protobuf-compiler libcli11-dev nlohmann-json3-dev \
  libtomlplusplus-dev libfmt-dev libzip-dev zlib1g-dev libssl-dev \
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev libonnx-testdata dataset-fashion-mnist

.PHONY: all deps build test demo bench sanitize clean

all: build

deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  if [ "$$(id -u)" != 0 ]; then echo "run as root (or install these packages with apt-get)"; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

demo: build
	$(GRIST) run examples/log_softmax.onnx --range=-60,60 --batch 4 --seed 1; test $$? -le 1

bench: build
	$(BUILD)/bench/engine_bench

# The importer and the engine under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGRIST_SANITIZE=ON
	ninja -C build-asan -j$(JOBS)
	cd build-asan && ctest --output-on-failure -j$(JOBS) -L "unit|conformance"

clean:
	rm -rf $(BUILD) build-asan
