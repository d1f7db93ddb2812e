# The two commands a newcomer needs (as root on Debian 12):
#   make demo   installs what is missing, builds, hunts a bundled example until it triggers and replays its witness
#   make test   installs what is missing, builds, and runs every test (the command CI runs)
BUILD ?= build
JOBS ?= 2
GRIST := $(BUILD)/grist

# Debian packages the build and the tests need; see README.md for what each one is for.
DEBIAN_PACKAGES := g++ cmake ninja-build pkg-config ccache \
  libeigen3-dev libonnx-dev libprotobuf-dev protobuf-compiler libcli11-dev nlohmann-json3-dev \
  libtomlplusplus-dev libfmt-dev libzip-dev zlib1g-dev libssl-dev \
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev libonnx-testdata dataset-fashion-mnist \
  python3-torch python3-torchvision python3-onnx python3-numpy libopenblas0-pthread clang libclang-rt-14-dev nodejs

# The quick slice of the benchmark that `make test` hunts end to end: the PyTorch toys, two MNIST subjects, the
# sqrt whose NaN is only in the loss's gradient (5), a softmax regression only the weight search reaches (20) and
# a divisor made of weights, settled first by an exact weight step (28b).
ZOO_SLICE := 2a,3,5,20,23,26,27,28b,32,33,37,38,46,54,56,57
# The slice passes or fails by iteration count, not by the machine's speed: 4,000 iterations per hazard (the
# weights join after 1,000), the 600 s time limit a backstop only. It fails when a subject stops triggering
# or fires on another op than its manifest expects.
ZOO_SLICE_ITERATIONS := 4000
# Debian's interpreter: the python3 first on PATH may not see Debian's torch.
PYTHON := /usr/bin/python3

.PHONY: all deps oracle build e2e-models test demo bench sanitize fuzz-smoke fuzz zoo zoo-slice zoo-bench clean

all: build

deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  if [ "$$(id -u)" != 0 ]; then echo "run as root (or install these packages with apt-get)"; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# ONNX Runtime from npm (onnxruntime-node, pinned by tests/oracle/package-lock.json) into tests/oracle/node_modules
# (gitignored): the real-model set's independent oracle. CPU only: its CUDA download is skipped. Debian's
# nodejs has no npm (NodeSource's has): the npm package is installed when the command is missing.
ORACLE := tests/oracle
oracle: deps
	@command -v npm >/dev/null || { echo "installing: npm"; \
	  if [ "$$(id -u)" != 0 ]; then echo "run as root (or install npm with apt-get)"; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
	@[ $(ORACLE)/node_modules/.package-lock.json -nt $(ORACLE)/package-lock.json ] || \
	  (cd $(ORACLE) && ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm ci --no-audit --no-fund)

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j$(JOBS)

# The real-model end-to-end set: exported by PyTorch and run in ONNX Runtime into $(BUILD)/e2e-models (cached).
e2e-models: build oracle
	ninja -C $(BUILD) -j$(JOBS) e2e_models

# Every zoo model is exported first (about 15 s, cached): the zoo reference test checks all of them.
test: build zoo e2e-models
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	$(GRIST) bench zoo --only $(ZOO_SLICE) --runs 2 --max-iterations $(ZOO_SLICE_ITERATIONS) --time-limit 600 --quiet \
	  --out $(BUILD)/bench-slice

# Export the zoo's models with Debian's PyTorch (deterministic, cached by a stamp per subject).
zoo: deps
	$(PYTHON) zoo/zoo_export.py
zoo-slice: deps
	$(PYTHON) zoo/zoo_export.py --only $(ZOO_SLICE)
# The full benchmark of docs/RESULTS.md: every subject, 10 seeds, 60 s each.
zoo-bench: build zoo
	$(GRIST) bench zoo --runs 10 --time-limit 60

# The main job on a bundled example: a hunt that triggers and saves a witness, then its replay.
demo: build
	rm -rf $(BUILD)/demo-witnesses
	$(GRIST) hunt examples/logistic_regression.toml --out $(BUILD)/demo-witnesses; test $$? -eq 1
	$(GRIST) replay $(BUILD)/demo-witnesses/witness-logistic_regression-h1.json; test $$? -eq 1

bench: build
	$(BUILD)/bench/engine_bench

# The tests under AddressSanitizer + UndefinedBehaviorSanitizer, built with clang so that the same build
# also gives the libFuzzer targets (optimised, so the conformance data runs in reasonable time). Left out: the
# zoo tests, the shell CLI test, the real-model set and the opset 18-21 models (RealModels, NewerOpsets: made in
# the main build only), the sharded campaign's equality test (zoo hunts, 19 s in the main build, over 10 minutes
# under the sanitizers) and the PyTorch witness check (zoo hunts too).
SAN_BUILD := build-asan
sanitize: deps
	cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
	  -DGRIST_SANITIZE=ON -DGRIST_FUZZ=ON
	ninja -C $(SAN_BUILD) -j$(JOBS) tests/all $(FUZZERS)
	cd $(SAN_BUILD) && ctest --output-on-failure -j$(JOBS) -L "unit|conformance" -E "Zoo|cli_test|RealModels|NewerOpsets|BenchMerge.NShardsMerged|torch_witness_test"

# libFuzzer on every reader of user files (tests/fuzz): the ONNX importer with the engine's forward and
# backward behind it, .npy, .npz, IDX, manifests and experiments.conf, from the committed files as seeds.
# A fixed seed and run count make CI repeat the same inputs (a slow machine stops at the time cap, part way
# along the same sequence); `make fuzz` explores further with a fresh seed.
FUZZERS := import_fuzzer model_file_fuzzer npy_fuzzer npz_fuzzer idx_fuzzer manifest_fuzzer conf_fuzzer
FUZZ_RUNS ?= 200000
FUZZ_SEED ?= 1
FUZZ_SECONDS ?= 60
FUZZ_FLAGS = -seed=$(FUZZ_SEED) -runs=$(FUZZ_RUNS) -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(SAN_BUILD)/
# Seeds that live among other files are copied into a folder per fuzzer first.
define run_fuzzers
	rm -rf $(SAN_BUILD)/corpus-* $(SAN_BUILD)/seeds-*
	mkdir -p $(addprefix $(SAN_BUILD)/corpus-,onnx model-file npy npz idx manifest conf) $(SAN_BUILD)/seeds-npz \
	  $(SAN_BUILD)/seeds-manifest
	for f in tests/models/*.npz zoo/*/reference.npz; do cp $$f $(SAN_BUILD)/seeds-npz/$$(echo $$f | tr / _); done
	for f in tests/models/*.toml zoo/*/manifest.toml; do cp $$f $(SAN_BUILD)/seeds-manifest/$$(echo $$f | tr / _); done
	$(SAN_BUILD)/import_fuzzer $(FUZZ_FLAGS) -max_len=65536 $(SAN_BUILD)/corpus-onnx tests/models examples tests/fuzz/seeds/onnx
	$(SAN_BUILD)/model_file_fuzzer $(FUZZ_FLAGS) -max_len=65536 $(SAN_BUILD)/corpus-model-file tests/models examples tests/fuzz/seeds/onnx
	$(SAN_BUILD)/npy_fuzzer $(FUZZ_FLAGS) $(SAN_BUILD)/corpus-npy tests/data/fixtures
	$(SAN_BUILD)/npz_fuzzer $(FUZZ_FLAGS) -max_len=65536 $(SAN_BUILD)/corpus-npz tests/data/fixtures $(SAN_BUILD)/seeds-npz
	$(SAN_BUILD)/idx_fuzzer $(FUZZ_FLAGS) $(SAN_BUILD)/corpus-idx tests/fuzz/seeds/idx
	$(SAN_BUILD)/manifest_fuzzer $(FUZZ_FLAGS) -max_len=16384 $(SAN_BUILD)/corpus-manifest $(SAN_BUILD)/seeds-manifest
	$(SAN_BUILD)/conf_fuzzer $(FUZZ_FLAGS) $(SAN_BUILD)/corpus-conf tests/fuzz/seeds/conf
endef
fuzz-smoke: sanitize
	$(run_fuzzers)

# Longer, with a fresh random seed each time: 10 minutes per fuzzer.
fuzz: FUZZ_SEED = 0
fuzz: FUZZ_RUNS = -1
fuzz: FUZZ_SECONDS = 600
fuzz: sanitize
	$(run_fuzzers)

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
