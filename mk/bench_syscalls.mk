# bench_syscalls.mk — make bench-syscalls: system calls per short connection
# that ends on kernel TCP, hooked against plain (perf/syscalls/; also run by
# `make bench`).  conn_loop is a plain POSIX program: scilan reaches it
# through the preload hook.

CONN_LOOP_BIN := $(BUILD)/bin/conn_loop

$(CONN_LOOP_BIN): perf/syscalls/conn_loop.c
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) $(WARN) $(OPT) -o $@ $<

.PHONY: bench-syscalls
bench-syscalls: hook tools $(CONN_LOOP_BIN)
	@perf/syscalls/bench.sh $(BUILD)
