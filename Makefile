# Makefile — builds libscilan, the benches and the tests into build/.
# `make run` and `make test` are the two commands README.md gives; both install
# missing Debian packages first (scripts/deps.sh).

CC       ?= gcc
OPT      ?= -O2 -g
WARN     := -std=gnu11 -Wall -Wextra -Werror
SAN      ?=
BUILD    ?= build
# -Idriver: the device fabric includes the driver's ABI as "uapi/scilan.h".
CPPFLAGS += -D_GNU_SOURCE -Ilibscilan/include -Ilibscilan/src -Idriver
PTHREAD  := -pthread

ifeq ($(SAN),asan)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SAN),tsan)
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else
SANFLAGS :=
endif

CFLAGS_ALL = $(WARN) $(OPT) $(SANFLAGS) -fPIC $(PTHREAD) $(CFLAGS)
LDFLAGS_ALL = $(SANFLAGS) $(PTHREAD) $(LDFLAGS)

# The library's layers are folders (ARCHITECTURE.md, "Layers"), two deep at most.
LIB_DIRS := libscilan/src libscilan/src/* libscilan/src/*/*
LIB_SRC  := $(wildcard $(addsuffix /*.c,$(LIB_DIRS)))
LIB_HDR  := $(wildcard $(addsuffix /*.h,$(LIB_DIRS)))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
SONAME   := libscilan.so.0
LIB_SO   := $(BUILD)/lib/libscilan.so
LIB_A    := $(BUILD)/lib/libscilan.a

HOOK_SRC := $(wildcard hook/*.c)
HOOK_OBJ := $(HOOK_SRC:%.c=$(BUILD)/obj/%.o)
HOOK_SO  := $(BUILD)/lib/libscilan_preload.so
# What each shared library exports (tests/exports/check.sh): the objects are
# also built hidden by default, but the version scripts decide, whatever
# CFLAGS a command line gives.
LIB_MAP  := libscilan/libscilan.map
HOOK_MAP := hook/preload.map
RUN_BIN  := $(BUILD)/bin/scilan_run

CTL_SRC  := $(filter-out tools/scilan_run.c,$(wildcard tools/*.c))
CTL_OBJ  := $(CTL_SRC:%.c=$(BUILD)/obj/%.o)
CTL_BIN  := $(BUILD)/bin/scilan_ctl
# Deferred (=): evaluated only when tools are built, after deps.sh installed them.
CTL_CFLAGS = $(shell pkg-config --cflags libpci hwloc)
CTL_LIBS   = $(shell pkg-config --libs libpci hwloc)

BENCH_SRC := $(wildcard perf/*.c)
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_BIN := $(BUILD)/bin/scilan-bench

TEST_SRC := $(wildcard tests/unit/*.c tests/integration/*.c)
TEST_COMMON := $(wildcard tests/common/*.c)
TEST_COMMON_OBJ := $(TEST_COMMON:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
# Self-contained multi-threaded tests: Criterion cannot run under TSan.
THREAD_SRC := $(wildcard tests/threads/*.c)
THREAD_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(THREAD_SRC))

# Fragments in mk/ (the hook tests, the real-program tests, the driver) add
# their own targets and append the test targets `make test` runs to EXTRA_TESTS.
EXTRA_TESTS :=
include $(wildcard mk/*.mk)

.PHONY: all lib hook bench-bin tools tests thread-tests run test test-model test-native test-asan test-tsan bench stress-long deps clean
.DEFAULT_GOAL := all

all: lib hook bench-bin tools tests
hook: $(HOOK_SO) $(RUN_BIN)
tools: $(CTL_BIN) $(RUN_BIN)
lib: $(LIB_SO) $(LIB_A)
bench-bin: $(BENCH_BIN)
# tests/integration/test_ctl runs $(CTL_BIN).
tests: $(TEST_BIN) $(THREAD_BIN) $(CTL_BIN) $(RUN_BIN)
thread-tests: $(THREAD_BIN)

# Not through CFLAGS, which `make CFLAGS=...` replaces: hidden symbols also
# make the libraries' internal calls direct.
$(BUILD)/obj/libscilan/%.o: VISIBILITY := -fvisibility=hidden
$(BUILD)/obj/hook/%.o: VISIBILITY := -fvisibility=hidden
$(HOOK_OBJ): hook/hook.h hook/epoll_set.h
$(BUILD)/obj/tools/%.o: CFLAGS += $(CTL_CFLAGS)
$(CTL_OBJ): $(wildcard tools/*.h)

$(BUILD)/obj/%.o: %.c $(LIB_HDR) $(wildcard libscilan/include/*.h driver/uapi/*.h perf/*.h tests/common/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS_ALL) $(VISIBILITY) -c $< -o $@

$(LIB_SO): $(LIB_OBJ) $(LIB_MAP)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=$(LIB_MAP) $(LDFLAGS_ALL) -o $(BUILD)/lib/$(SONAME) $(LIB_OBJ)
	ln -sf $(SONAME) $@

$(LIB_A): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The hook carries its own copy of libscilan: a program must not need
# libscilan.so on its library path to be preloaded.  Bound at load (-z now):
# resolved lazily, its first connection looked up some sixty symbols on the
# way (about 90 us); at load the same lookups did not show against an exec's
# 0.9 ms.  Read-only after relocation too (relro), as a hardened library is.
$(HOOK_SO): $(LIB_OBJ) $(HOOK_OBJ) $(HOOK_MAP)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) -shared -Wl,--version-script=$(HOOK_MAP) -Wl,-z,now -Wl,-z,relro $(LDFLAGS_ALL) -o $@ $(LIB_OBJ) $(HOOK_OBJ) -ldl

$(RUN_BIN): $(BUILD)/obj/tools/scilan_run.o
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(LDFLAGS_ALL) -o $@ $^

$(CTL_BIN): $(CTL_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(LDFLAGS_ALL) -o $@ $^ $(CTL_LIBS)

$(BENCH_BIN): $(BENCH_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(LDFLAGS_ALL) -o $@ $(BENCH_OBJ) $(LIB_A) -lm

$(BUILD)/tests/threads/%: tests/threads/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -o $@ $< $(LIB_A) $(LDFLAGS_ALL)

$(BUILD)/tests/%: tests/%.c $(TEST_COMMON_OBJ) $(LIB_A) $(wildcard tests/common/*.h)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) -Itests/common $(CFLAGS_ALL) -o $@ $< $(TEST_COMMON_OBJ) $(LIB_A) $(LDFLAGS_ALL) -lcriterion -lm

deps:
	@scripts/deps.sh

# The main job: scilan polling / hybrid / interrupt against kernel TCP and Unix sockets.
run: deps
	@$(MAKE) --no-print-directory all
	$(BENCH_BIN) quick --out $(BUILD)/perf

bench: deps
	@$(MAKE) --no-print-directory all
	$(BENCH_BIN) all --out $(BUILD)/perf
	@rc=0; $(MAKE) --no-print-directory bench-syscalls || rc=1; \
	 $(MAKE) --no-print-directory bench-first-connect || rc=1; exit $$rc

test: deps
	@rm -rf $(BUILD)/results
	@$(MAKE) --no-print-directory test-model test-native test-asan test-tsan $(EXTRA_TESTS)
	@scripts/test-summary.sh $(BUILD)/results

# SPIN model of the sleep protocol under x86-TSO (and mutants that must fail).
test-model:
	@tests/model/check.sh $(BUILD)/results/model.txt || true

test-native:
	@$(MAKE) --no-print-directory tests BUILD=$(BUILD)
	@scripts/run-tests.sh $(BUILD)/tests native $(BUILD)/results

test-asan:
	@$(MAKE) --no-print-directory tests SAN=asan BUILD=$(BUILD)/asan
	@scripts/run-tests.sh $(BUILD)/asan/tests asan $(BUILD)/results

test-tsan:
	@$(MAKE) --no-print-directory thread-tests SAN=tsan BUILD=$(BUILD)/tsan
	@scripts/run-tests.sh $(BUILD)/tsan/tests/threads tsan $(BUILD)/results

# Opt-in: the 10,000,000 hand-off lost-wake-up runs, per connection, per
# epoll set and per poll queue (their watchdogs fail on 10 s without a hand-off).
stress-long: deps
	@$(MAKE) --no-print-directory tests hooktests
	SCILAN_STRESS_HANDOFFS=10000000 $(BUILD)/tests/integration/test_wakeup_stress
	SCEN_HANDOFFS=10000000 SCEN_LIMIT=86400 $(RUN_BIN) $(BUILD)/hookprogs/epollq handoff
	SCEN_HANDOFFS=10000000 SCEN_LIMIT=86400 $(RUN_BIN) $(BUILD)/hookprogs/pollq handoff

clean:
	rm -rf $(BUILD)
