# Downpour — one Makefile. `make` builds build/downpour; `make test` runs every test and
# ends with "N passed, N failed"; `make asan` does the same under ASan+UBSan; `make bench`
# writes bench/RESULTS.md; `make demo` runs the main job; `make deps` installs packages.
# `make test-gpu` runs the GPU tests (they skip, saying so, without a CUDA device).
# CUDA: built whenever nvcc is found (PATH, else /usr/local/cuda/bin); `make CUDA=0` turns
# it off and builds runtime/gpu/gpu_none.c instead (docs/gpu.md).

CC      ?= cc
BUILD   ?= build
CSTD     = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
OPT     ?= -O2 -g
PKGS     = openblas jansson libzstd zlib sdl2 cairo libpng inih libmicrohttpd libsodium
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS  += $(CSTD) $(WARN) $(OPT) -MMD -MP -I. $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS  += $(PKG_LIBS) -lev -lm -lpthread $(EXTRA_LDLIBS)

LIB_SRC  := $(wildcard common/*.c net/*.c events/*.c hub/*.c cluster/*.c runtime/*.c sim/*.c viz/*.c lab/*.c web/*.c)

# ---- CUDA (runtime/gpu/) ----------------------------------------------------------------
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
CUDA ?= $(if $(NVCC),1,0)
ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error CUDA=1 but no nvcc found: put it on PATH or pass NVCC=/path/to/nvcc)
endif
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(NVCC)))
# Machine code for sm_80 (A100) and sm_90 (H100/H200), plus compute_90 PTX that newer
# GPUs compile at load time. CUDA 13 accepts sm_75 and up.
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS ?= -std=c++17 -O2 -g
NVCC_WARN = -Xcompiler -Wall,-Wextra,-Wshadow
GPU_OBJ   = $(BUILD)/runtime/gpu/gpu.o
CFLAGS   += -DDP_HAVE_CUDA=1
# cudart is linked statically (cheap: ~2 ms a process; with no driver it reports "no
# CUDA driver"). cuBLAS is not linked: gpu.cu opens $(CUDA_HOME)/lib64/libcublas.so.N at
# the first gpu_open, because loading it costs every process ~0.2 s (docs/gpu.md).
NVCC_DEFS = -DDP_CUBLAS_DIR='"$(CUDA_HOME)/lib64"'
CUDA_LIBS = $(CUDA_HOME)/lib64/libcudart_static.a -ldl -lrt -lstdc++
else
GPU_OBJ   =
CUDA_LIBS =
LIB_SRC  += runtime/gpu/gpu_none.c
endif
# A change of CUDA=0/1 rebuilds every object (DP_HAVE_CUDA) and the library: the setting
# is recorded in this file, rewritten only when it changes.
CUDA_STAMP := $(BUILD)/cuda.conf
$(shell mkdir -p $(BUILD) && (echo "CUDA=$(CUDA) $(NVCC)" | cmp -s - $(CUDA_STAMP) || \
    echo "CUDA=$(CUDA) $(NVCC)" >$(CUDA_STAMP)))
LDLIBS   += $(CUDA_LIBS)
# `downpour --version` names the commit it was built from; the stamp is rewritten only
# when that changes, so cli/main.o is rebuilt then and only then.
GIT_REV := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
VERSION_STAMP := $(BUILD)/version.conf
$(shell echo "$(GIT_REV)" | cmp -s - $(VERSION_STAMP) || echo "$(GIT_REV)" >$(VERSION_STAMP))
CLI_SRC  := $(wildcard cli/*.c)
TEST_SRC := $(wildcard tests/test_*.c)
TOOL_SRC := $(wildcard tests/tool_*.c)
BENCH_SRC:= $(wildcard bench/bench_*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(GPU_OBJ)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TOOL_BIN := $(TOOL_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN:= $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
LIB      := $(BUILD)/libdownpour.a

.PHONY: all test test-gpu test-gpu-asan asan asan-unit validate-sim bench demo deps clean check-deps recordings install soak fuzz fuzz-build
# Keep the objects of tests, tools and benches (make would delete them as intermediates).
.SECONDARY:
all: $(BUILD)/downpour $(TEST_BIN) $(TOOL_BIN) $(BENCH_BIN)

$(BUILD)/%.o: %.c $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# nvcc runs only when gpu.cu or a header it includes changed (-MMD, as for the C code).
$(BUILD)/runtime/gpu/gpu.o: runtime/gpu/gpu.cu $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(NVCC_WARN) $(NVCC_DEFS) $(CUDA_ARCH) -I. -MMD -MP -MF $(@:.o=.d) -c $< -o $@

$(LIB): $(LIB_OBJ) $(CUDA_STAMP)
	@rm -f $@
	ar rcs $@ $(LIB_OBJ)

$(BUILD)/downpour: $(CLI_OBJ) $(LIB)
	$(CC) $(CFLAGS) $(CLI_OBJ) $(LIB) $(LDLIBS) -o $@

$(BUILD)/cli/main.o: CFLAGS += -DDP_GIT_REV='"$(GIT_REV)"'
$(BUILD)/cli/main.o: $(VERSION_STAMP)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB)
	$(CC) $(CFLAGS) $< $(LIB) $(LDLIBS) -o $@

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIB)
	$(CC) $(CFLAGS) $< $(LIB) $(LDLIBS) -o $@

# deps: installs the Debian packages when something is missing (root), or prints the
# exact command and stops.
check-deps:
	@./scripts/deps.sh --check-only >/dev/null 2>&1 || ./scripts/deps.sh

deps:
	@./scripts/deps.sh

test: check-deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) ./tests/run.sh

# test-gpu: the GPU tests; each prints "skipped: no CUDA device (...)" without one:
# test_gpu (kernels, SGEMM and an MLP's forward and backward against the CPU) and it_gpu.sh
# (the device layer: placement log, a 100-step run GPU vs CPU, towers over the GPUs).
GPU_TESTS = $(BUILD)/tests/test_gpu tests/it_gpu.sh
test-gpu: check-deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) ./tests/run.sh $(GPU_TESTS)

# With a CUDA driver loaded, ASan must leave the shadow gap unprotected: the driver
# reserves addresses there, and every cudaMalloc fails otherwise (google/sanitizers#629);
# tests/lsan.supp names the driver's own leaks. Without CUDA built, nothing changes.
# -ftrivial-auto-var-init=pattern fills every uninitialised local with 0xFE bytes, so a
# read of one fails the same way on every machine instead of by the stack's leftovers
# (a test's uninitialised struct crashed asan-unit on one VM and passed on another).
ASAN_VARS = BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -ftrivial-auto-var-init=pattern" \
    EXTRA_LDLIBS="-fsanitize=address,undefined"
ASAN_ENV  = ASAN_OPTIONS=detect_leaks=1$(if $(filter 1,$(CUDA)),:protect_shadow_gap=0) \
    LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp
asan: check-deps
	@$(MAKE) --no-print-directory $(ASAN_VARS) all
	@BUILD=build-asan $(ASAN_ENV) ./tests/run.sh

# asan-unit: every C unit test (tests/test_*.c) under ASan+UBSan: a few minutes, so
# .ci/run runs it after `make test` (the whole suite under them is `make asan`).
asan-unit: check-deps
	@$(MAKE) --no-print-directory $(ASAN_VARS) build-asan/downpour $(TEST_BIN:$(BUILD)/%=build-asan/%)
	@BUILD=build-asan $(ASAN_ENV) ./tests/run.sh $(TEST_BIN:$(BUILD)/%=build-asan/%)

# test-gpu-asan: the GPU tests alone under ASan+UBSan (scripts/gpu-check.sh runs it).
test-gpu-asan: check-deps
	@$(MAKE) --no-print-directory $(ASAN_VARS) $(GPU_TESTS:$(BUILD)/%=build-asan/%)
	@BUILD=build-asan $(ASAN_ENV) ./tests/run.sh $(GPU_TESTS:$(BUILD)/%=build-asan/%)

# validate-sim: the simulator against a matrix of real runs (scripts/validate_sim.py):
# self-prediction and prediction errors, table written into docs/simulator.md.
validate-sim: check-deps
	@$(MAKE) --no-print-directory all
	@python3 scripts/validate_sim.py $(BUILD)/downpour $(BUILD)/validate-sim --doc docs/simulator.md

bench: check-deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) ./bench/run.sh

# soak: 100 random kill / restart events of workers and ps across one sync run (bounded
# to 5 minutes), checked against an undisturbed run; figures: docs/reliability.md.
soak: check-deps
	@$(MAKE) --no-print-directory $(BUILD)/downpour
	@DOWNPOUR=$(PWD)/$(BUILD)/downpour python3 scripts/soak.py --report $(BUILD)/soak.md

demo: check-deps
	@$(MAKE) --no-print-directory $(BUILD)/downpour
	@BUILD=$(BUILD) ./scripts/demo.sh

# recordings: scenarios/recorded/, a trace of every variant of each shipped scenario.
recordings: $(BUILD)/downpour
	@BUILD=$(BUILD) ./scripts/recordings.sh

# install: the downpour binary into $(PREFIX)/bin (default /usr/local), and its bash
# completion where bash-completion looks for it under $(PREFIX).
PREFIX ?= /usr/local
install: $(BUILD)/downpour
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 755 $(BUILD)/downpour $(DESTDIR)$(PREFIX)/bin/downpour
	$(BUILD)/downpour completion bash >$(DESTDIR)$(PREFIX)/share/bash-completion/completions/downpour

# ---- fuzzing (tests/fuzz/, docs/reliability.md "Fuzzing") -----------------------------
# `make fuzz` builds the libFuzzer targets with clang into build-fuzz/ (the parsers'
# library sources with -fsanitize=fuzzer-no-link,address,undefined, each target with
# -fsanitize=fuzzer,address,undefined) and runs each for FUZZ_TIME seconds on a copy of
# its seed corpus (tests/fuzz/run.sh): it prints libFuzzer's "#N DONE ... exec/s" line
# and any crash file per target, and fails on a crash. FUZZ_TARGETS picks some.
FUZZ_CC      ?= clang
FUZZ_TIME    ?= 60
FUZZ_BUILD   ?= build-fuzz
FUZZ_TARGETS ?= frame proto handshake emitter sub auth trace idx scenario spec ckpt
FUZZ_SAN      = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS   = $(CSTD) $(WARN) -O1 -g -fno-omit-frame-pointer -MMD -MP -I. $(PKG_CFLAGS) $(FUZZ_SAN)
FUZZ_LIB_SRC := $(wildcard common/*.c net/*.c events/*.c hub/*.c cluster/*.c) \
    runtime/proto.c runtime/data.c runtime/data_cache.c runtime/ckpt.c
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_LIB      = $(FUZZ_BUILD)/libfuzzdp.a
FUZZ_BIN     := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $(FUZZ_LIB_OBJ)

# fuzz_handshake includes hub/hub.c and fuzz_emitter hub/emitter.c (to reach their
# static callbacks), so the archive's hub.o / emitter.o are never pulled into those.
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_util.h $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_LIB) $(PKG_LIBS) -lev -lm -lpthread -o $@

fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_TIME=$(FUZZ_TIME) ./tests/fuzz/run.sh $(FUZZ_TARGETS)

-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_BIN:=.d)

clean:
	rm -rf build build-asan

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_BIN:=.d) $(TOOL_BIN:=.d) $(BENCH_BIN:=.d)
