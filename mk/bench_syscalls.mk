# bench_syscalls.mk — make bench-syscalls: system calls per short connection
# that ends on kernel TCP, hooked against plain; make bench-first-connect: a
# process's first connection against its second (perf/syscalls/; both also
# run by `make bench`).  conn_loop and first_connect are plain POSIX
# programs: scilan reaches them through the preload hook.

CONN_LOOP_BIN := $(BUILD)/bin/conn_loop

$(CONN_LOOP_BIN): perf/syscalls/conn_loop.c
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) $(WARN) $(OPT) -o $@ $<

FIRST_CONNECT_BIN := $(BUILD)/bin/first_connect

$(FIRST_CONNECT_BIN): perf/syscalls/first_connect.c
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) $(WARN) $(OPT) -pthread -o $@ $<

.PHONY: bench-first-connect
bench-first-connect: hook tools $(CONN_LOOP_BIN) $(FIRST_CONNECT_BIN)
	@perf/syscalls/first_connect.sh $(BUILD)

.PHONY: bench-syscalls
bench-syscalls: hook tools $(CONN_LOOP_BIN)
	@perf/syscalls/bench.sh $(BUILD)
