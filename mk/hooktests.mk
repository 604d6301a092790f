# hooktests.mk — test-hook: the scenario programs of tests/hook/progs (plain
# POSIX socket programs) run plain and under the preload hook by the Criterion
# tests of tests/hook, compared against kernel TCP; native build only.
#
# The programs go to $(BUILD)/hookprogs, not $(BUILD)/tests/...: test-native
# runs every executable under $(BUILD)/tests as a Criterion binary, and the
# runner below does the same under $(BUILD)/hooktests.

HOOKPROG_DIR  := $(BUILD)/hookprogs
HOOKTEST_DIR  := $(BUILD)/hooktests
HOOKPROG_SRC  := $(filter-out tests/hook/progs/scen%.c,$(wildcard tests/hook/progs/*.c))
HOOKPROG_BIN  := $(patsubst tests/hook/progs/%.c,$(HOOKPROG_DIR)/%,$(HOOKPROG_SRC))
HOOKTEST_SRC  := $(wildcard tests/hook/test_*.c)
HOOKTEST_BIN  := $(patsubst tests/hook/%.c,$(HOOKTEST_DIR)/%,$(HOOKTEST_SRC))
HOOKTEST_LIB  := $(filter-out $(HOOKTEST_SRC),$(wildcard tests/hook/*.c))
HOOK_FLAGS    := -D_GNU_SOURCE $(WARN) $(OPT) -pthread
# progs/agree.c, stall.c and promote.c drive io_uring, whose calls no preload can see.
$(HOOKPROG_DIR)/agree $(HOOKPROG_DIR)/stall: HOOKPROG_LIBS := tests/hook/progs/scen_uring.c -luring
$(HOOKPROG_DIR)/promote: HOOKPROG_LIBS := tests/hook/progs/scen_uring.c tests/hook/progs/scen_promote_ev.c \
	tests/hook/progs/scen_promote_calls.c -luring
$(HOOKPROG_DIR)/agree $(HOOKPROG_DIR)/stall $(HOOKPROG_DIR)/promote: tests/hook/progs/scen_uring.c tests/hook/progs/scen_uring.h
$(HOOKPROG_DIR)/promote: tests/hook/progs/scen_promote_ev.c tests/hook/progs/scen_promote_calls.c \
	tests/hook/progs/scen_promote.h

$(HOOKPROG_DIR)/%: tests/hook/progs/%.c tests/hook/progs/scen.c tests/hook/progs/scen.h
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(HOOK_FLAGS) -Itests/hook/progs -o $@ $< tests/hook/progs/scen.c $(HOOKPROG_LIBS)

# procs.c linked statically: an exec'd image that loads no preload.
$(HOOKPROG_DIR)/procs-static: tests/hook/progs/procs.c tests/hook/progs/scen.c tests/hook/progs/scen.h
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(HOOK_FLAGS) -static -Itests/hook/progs -o $@ $< tests/hook/progs/scen.c

# goimage.c with Go's .go.buildinfo section but no build-id note.
$(HOOKPROG_DIR)/goimage-buildinfo: tests/hook/progs/goimage.c tests/hook/progs/scen.c tests/hook/progs/scen.h
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(HOOK_FLAGS) -DGO_BUILDINFO_ONLY -Itests/hook/progs -o $@ $< tests/hook/progs/scen.c

$(HOOKTEST_DIR)/%: tests/hook/%.c $(HOOKTEST_LIB) $(wildcard tests/hook/*.h)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(HOOK_FLAGS) -Itests/hook -o $@ $< $(HOOKTEST_LIB) -lcriterion

.PHONY: test-hook hooktests
hooktests: hook $(HOOKPROG_BIN) $(HOOKPROG_DIR)/procs-static $(HOOKPROG_DIR)/goimage-buildinfo $(HOOKTEST_BIN)

test-hook: hooktests
	@scripts/run-tests.sh $(HOOKTEST_DIR) hook $(BUILD)/results

EXTRA_TESTS += test-hook
