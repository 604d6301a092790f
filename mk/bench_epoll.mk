# bench_epoll.mk — make bench-epoll: one epoll set of N connections
# (perf/epoll/), kernel TCP and scilan in one run.  epoll_scale is a plain
# POSIX program: scilan reaches it through the preload hook.

EPOLL_BENCH_BIN := $(BUILD)/bin/epoll_scale

$(EPOLL_BENCH_BIN): perf/epoll/epoll_scale.c
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CPPFLAGS) $(WARN) $(OPT) -o $@ $<

.PHONY: bench-epoll
bench-epoll: hook $(EPOLL_BENCH_BIN)
	@perf/epoll/bench.sh $(BUILD)
