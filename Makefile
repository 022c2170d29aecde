# Downpour — one Makefile. `make` builds build/downpour; `make test` runs every test and
# ends with "N passed, N failed"; `make asan` does the same under ASan+UBSan; `make bench`
# writes bench/RESULTS.md; `make demo` runs the main job; `make deps` installs packages.

CC      ?= cc
BUILD   ?= build
CSTD     = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
OPT     ?= -O2 -g
PKGS     = openblas jansson libzstd zlib sdl2 cairo inih libmicrohttpd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS  += $(CSTD) $(WARN) $(OPT) -MMD -MP -I. $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS  += $(PKG_LIBS) -lev -lm -lpthread $(EXTRA_LDLIBS)

LIB_SRC  := $(wildcard common/*.c events/*.c cluster/*.c runtime/*.c sim/*.c viz/*.c lab/*.c web/*.c) \
            runtime/gpu/gpu_none.c
CLI_SRC  := $(wildcard cli/*.c)
TEST_SRC := $(wildcard tests/test_*.c)
TOOL_SRC := $(wildcard tests/tool_*.c)
BENCH_SRC:= $(wildcard bench/bench_*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TOOL_BIN := $(TOOL_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN:= $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
LIB      := $(BUILD)/libdownpour.a

.PHONY: all test asan bench demo deps clean check-deps recordings install
# Keep the objects of tests, tools and benches (make would delete them as intermediates).
.SECONDARY:
all: $(BUILD)/downpour $(TEST_BIN) $(TOOL_BIN) $(BENCH_BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/downpour: $(CLI_OBJ) $(LIB)
	$(CC) $(CFLAGS) $(CLI_OBJ) $(LIB) $(LDLIBS) -o $@

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

asan: check-deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    EXTRA_LDLIBS="-fsanitize=address,undefined" all
	@BUILD=build-asan ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp ./tests/run.sh

bench: check-deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) ./bench/run.sh

demo: check-deps
	@$(MAKE) --no-print-directory $(BUILD)/downpour
	@BUILD=$(BUILD) ./scripts/demo.sh

# recordings: scenarios/recorded/, a trace of every variant of each shipped scenario.
recordings: $(BUILD)/downpour
	@BUILD=$(BUILD) ./scripts/recordings.sh

# install: the downpour binary into $(PREFIX)/bin (default /usr/local).
PREFIX ?= /usr/local
install: $(BUILD)/downpour
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/downpour $(DESTDIR)$(PREFIX)/bin/downpour

clean:
	rm -rf build build-asan

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_BIN:=.d) $(TOOL_BIN:=.d) $(BENCH_BIN:=.d)
