# fuzz.mk — coverage-guided fuzzing (clang's libFuzzer, ASan+UBSan) of every
# reader of untrusted input: the targets of tests/fuzz, built against their
# own instrumented objects of libscilan.  `make test-fuzz` runs each briefly
# over its committed corpus (part of `make test`); `make fuzz-long` is the
# opt-in 10,000,000 executions per target (half an hour for the slow ones).

FUZZ_CC     ?= clang-14
FUZZ_DIR    := $(BUILD)/fuzz
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -D_GNU_SOURCE -Ilibscilan/include -Ilibscilan/src -Idriver -Itests/fuzz $(WARN) -O1 -g $(FUZZ_SAN) -pthread
FUZZ_OBJ    := $(LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN    := $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/bin/%,$(FUZZ_SRC))
# Per target: a few seconds over the corpus, or the long run.
FUZZ_SHORT  ?= -max_total_time=4
FUZZ_LONG   ?= -runs=10000000
# The targets that build real descriptors and connections per input run a
# few hundred inputs a second: their long run is a time (run-fuzz.sh).
FUZZ_LONG_SLOW ?= -max_total_time=1800
FUZZ_SLOW   := fuzz_rendezvous fuzz_ctl_area

$(FUZZ_DIR)/obj/%.o: %.c $(LIB_HDR) $(wildcard libscilan/include/*.h driver/uapi/*.h)
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/bin/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	@echo "  FUZZLD  $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ)

# Kept: every target links all of them.
.SECONDARY: $(FUZZ_OBJ)

.PHONY: fuzz test-fuzz fuzz-long
fuzz: $(FUZZ_BIN)

test-fuzz: fuzz
	@scripts/run-fuzz.sh $(FUZZ_DIR)/bin tests/fuzz/corpus $(BUILD)/results fuzz $(FUZZ_SHORT)

fuzz-long: deps
	@$(MAKE) --no-print-directory fuzz
	@$(foreach t,$(FUZZ_SLOW),FUZZ_ARGS_$(t)='$(FUZZ_LONG_SLOW)') \
		scripts/run-fuzz.sh $(FUZZ_DIR)/bin tests/fuzz/corpus $(BUILD)/results fuzz-long $(FUZZ_LONG)

EXTRA_TESTS += test-fuzz
