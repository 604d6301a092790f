# apps.mk — unmodified Debian programs on scilan (issue 3): `make test-apps`
# (tests/apps), `make bench-apps-pairs` and `make run-apps` (perf/apps/bench.sh,
# the latter also in `make run`).  `make bench-apps`: mk/bench_apps.mk.

APPS_RPC_DIR  := $(BUILD)/apps/rpc
APPS_RPC_GEN  := $(APPS_RPC_DIR)/gen
APPS_RPC_BIN  := $(APPS_RPC_DIR)/bulk_server $(APPS_RPC_DIR)/bulk_client
# Deferred (=): libtirpc is installed by apps-deps, after the makefiles are read.
APPS_TIRPC_CFLAGS = $(shell pkg-config --cflags libtirpc)
APPS_TIRPC_LIBS   = $(shell pkg-config --libs libtirpc)
APPS_CFLAGS   := -D_GNU_SOURCE $(WARN) $(OPT)
# rpcgen's output (not ours to edit) casts xdr_void to xdrproc_t, leaves
# main's argc/argv and an xdr buffer unused: those warnings only, there.
APPS_GEN_CFLAGS := $(APPS_CFLAGS) -Wno-cast-function-type -Wno-unused-parameter -Wno-unused-variable

.PHONY: apps-deps test-apps test-containers bench-apps-pairs run-apps

# Missing Debian packages of the programs (as root; else the apt-get line).
apps-deps:
	@tests/apps/deps.sh

# rpcgen writes next to its input: it runs on a copy in the build tree.
$(APPS_RPC_GEN)/bulk.h: tests/apps/rpc/bulk.x | apps-deps
	@rm -rf $(APPS_RPC_GEN) && mkdir -p $(APPS_RPC_GEN)
	@echo "  RPCGEN  $<"
	@cp $< $(APPS_RPC_GEN)/bulk.x && cd $(APPS_RPC_GEN) && rpcgen -M bulk.x

$(APPS_RPC_GEN)/%.o: $(APPS_RPC_GEN)/bulk.h
	@echo "  CC      $(APPS_RPC_GEN)/$*.c"
	@$(CC) $(APPS_GEN_CFLAGS) $(APPS_TIRPC_CFLAGS) -c $(APPS_RPC_GEN)/$*.c -o $@

$(APPS_RPC_DIR)/%.o: tests/apps/rpc/%.c $(APPS_RPC_GEN)/bulk.h
	@echo "  CC      $<"
	@$(CC) $(APPS_CFLAGS) $(APPS_TIRPC_CFLAGS) -I$(APPS_RPC_GEN) -c $< -o $@

# The server's main is rpcgen's (bulk_svc.c); the procedures are ours.
$(APPS_RPC_DIR)/bulk_server: $(APPS_RPC_GEN)/bulk_svc.o $(APPS_RPC_GEN)/bulk_xdr.o $(APPS_RPC_DIR)/bulk_server.o
	@echo "  LINK    $@"
	@$(CC) -o $@ $^ $(APPS_TIRPC_LIBS)

$(APPS_RPC_DIR)/bulk_client: $(APPS_RPC_DIR)/bulk_client.o $(APPS_RPC_GEN)/bulk_clnt.o $(APPS_RPC_GEN)/bulk_xdr.o
	@echo "  LINK    $@"
	@$(CC) -o $@ $^ $(APPS_TIRPC_LIBS)

# Alone, a failing case fails the make; inside `make test` (whose sub-make
# also builds test-native) it is counted by test-summary.sh and the other
# suites still run.
APPS_TEST_SOFT = $(if $(filter test-native,$(MAKECMDGOALS)),|| true)
test-apps: hook apps-deps $(APPS_RPC_BIN)
	@echo "== [apps] unmodified programs, kernel TCP and scilan (tests/apps)"
	@tests/apps/run-all.sh $(BUILD) $(BUILD)/results $(APPS_TEST_SOFT)

# Containers alone (tests/apps/containers.sh): says which runtime it used.
test-containers: hook apps-deps
	@echo "== [containers] containers of one pod, and two tenants (tests/apps/containers.sh)"
	@SCILAN_BUILD=$(BUILD) tests/apps/containers.sh

# One connection per program pair (latency, redis, nginx+wrk, iperf3).
bench-apps-pairs: hook apps-deps
	@perf/apps/bench.sh

run-apps: hook apps-deps
	@perf/apps/bench.sh --quick

# `make run` also compares an unmodified program pair on both transports.
run: run-apps

EXTRA_TESTS += test-apps
