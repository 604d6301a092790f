# preload.mk — test-preload: the unmodified echo_pair program run with and
# without the hook in every combination, and native_pair (the native API of
# libscilan.so) with and without it (tests/preload), native build only
# (the hook is preloaded into programs that are not sanitizer-built).

PRELOAD_TEST_DIR := $(BUILD)/preloadtests

$(PRELOAD_TEST_DIR)/echo_pair: tests/preload/echo_pair.c
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) $(WARN) $(OPT) -o $@ $<

# Linked with libscilan.so, found beside the hook in $(BUILD)/lib.
$(PRELOAD_TEST_DIR)/native_pair: tests/preload/native_pair.c $(LIB_SO)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) $(WARN) $(OPT) -o $@ $< -L$(BUILD)/lib -Wl,-rpath,'$$ORIGIN/../lib' -lscilan

$(PRELOAD_TEST_DIR)/test_preload: tests/preload/test_preload.c
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) $(WARN) $(OPT) -o $@ $< -lcriterion

.PHONY: test-preload
test-preload: hook $(PRELOAD_TEST_DIR)/echo_pair $(PRELOAD_TEST_DIR)/native_pair $(PRELOAD_TEST_DIR)/test_preload
	@mkdir -p $(BUILD)/results
	@echo "== [preload] test_preload"
	@$(PRELOAD_TEST_DIR)/test_preload --jobs 1 --verbose=0 >$(BUILD)/results/preload.log 2>&1; \
	rc=$$?; cat $(BUILD)/results/preload.log; \
	line=$$(grep -a 'Synthesis:' $(BUILD)/results/preload.log | tail -n 1); \
	p=$$(echo "$$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p'); \
	f=$$(echo "$$line" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p'); \
	c=$$(echo "$$line" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p'); \
	f=$$(( $${f:-0} + $${c:-0} )); [ $$rc -ne 0 ] && [ $$f -eq 0 ] && f=1; \
	echo "preload test_preload $${p:-0} $$f" > $(BUILD)/results/preload.txt

EXTRA_TESTS += test-preload
