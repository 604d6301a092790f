# driver.mk — `make driver` (scilan.ko, the NTB core ntb.ko built from Debian's
# linux-source, the test-only ntb_mock.ko) and `make test-kernel` (QEMU guest
# tests, tests/kernel).  Sources stay in driver/; kbuild works in build/driver/.

KVER      ?= $(shell ls /usr/src | sed -n 's/^linux-headers-\(.*-amd64\)$$/\1/p' | sort -V | tail -n 1)
KDIR      ?= /usr/src/linux-headers-$(KVER)
KSRC_TAR  ?= $(firstword $(wildcard /usr/src/linux-source-*.tar.xz))
DRV_BUILD := $(abspath $(BUILD))/driver
NTB_DIR   := $(DRV_BUILD)/ntb
SCILAN_DIR := $(DRV_BUILD)/scilan
MOCK_DIR  := $(DRV_BUILD)/ntb_mock
KMAKE     = $(MAKE) --no-print-directory -C $(KDIR) W=1
DRV_SRC   := $(wildcard driver/*.c driver/*.h driver/uapi/*.h)
MOCK_SRC  := $(wildcard driver/ntb_mock/*.c driver/ntb_mock/*.h)

.PHONY: driver driver-deps test-kernel bench-kernel test-fabric test-moves

# Packages the kernel build and the QEMU tests need (as root, on a clean CI
# machine); waits for another apt/dpkg run instead of failing on its lock.
driver-deps:
	@tests/kernel/deps.sh

driver: driver-deps
	@$(MAKE) --no-print-directory $(NTB_DIR)/ntb.ko $(SCILAN_DIR)/scilan.ko $(MOCK_DIR)/ntb_mock.ko

# Debian builds its kernel without CONFIG_NTB: the NTB core (drivers/ntb/core.c)
# is extracted from the linux-source tarball and built as an external module.
$(NTB_DIR)/core.c:
	@mkdir -p $(NTB_DIR)
	@echo "  EXTRACT drivers/ntb/core.c from $(KSRC_TAR)"
	@tar -xJOf $(KSRC_TAR) --wildcards '*/drivers/ntb/core.c' > $@.tmp && mv $@.tmp $@

$(NTB_DIR)/ntb.ko: $(NTB_DIR)/core.c
	@printf 'obj-m := ntb.o\nntb-y := core.o\n' > $(NTB_DIR)/Kbuild
	@$(KMAKE) M=$(NTB_DIR) modules W=

# Out-of-tree kbuild writes objects beside the sources: link the sources into
# build/ and build there, so driver/ holds only what is committed.
$(SCILAN_DIR)/scilan.ko: $(NTB_DIR)/ntb.ko $(DRV_SRC) driver/Kbuild
	@mkdir -p $(SCILAN_DIR)/uapi
	@for f in $(DRV_SRC) driver/Kbuild; do ln -sf $(abspath $$f) $(SCILAN_DIR)/$${f#driver/}; done
	@$(KMAKE) M=$(SCILAN_DIR) KBUILD_EXTRA_SYMBOLS=$(NTB_DIR)/Module.symvers modules

$(MOCK_DIR)/ntb_mock.ko: $(NTB_DIR)/ntb.ko $(MOCK_SRC) driver/ntb_mock/Kbuild
	@mkdir -p $(MOCK_DIR)
	@for f in $(MOCK_SRC) driver/ntb_mock/Kbuild; do ln -sf $(abspath $$f) $(MOCK_DIR)/; done
	@$(KMAKE) M=$(MOCK_DIR) KBUILD_EXTRA_SYMBOLS=$(NTB_DIR)/Module.symvers modules

# The guest suites: tests/kernel/run.sh (Debian's kernel in QEMU, the mock NTB
# pair, results in $(BUILD)/results/kernel.txt) and tests/kernel/run-two.sh
# (two guests over ivshmem-doorbell and virtio-net, results in
# $(BUILD)/results/kernel-two.txt, bench table in bench-kernel-two.md).
# Alone, a failure fails the make; inside `make test` (whose sub-make also
# builds test-native) it is counted by test-summary.sh and the other suites
# still run.
KERNEL_TEST_SOFT = $(if $(filter test-native,$(MAKECMDGOALS)),|| true)
test-kernel: driver $(CTL_BIN) $(HOOK_SO)
	@tests/kernel/run.sh $(BUILD) $(KERNEL_TEST_SOFT)
	@tests/kernel/run-two.sh $(BUILD) $(KERNEL_TEST_SOFT)
	@$(MAKE) --no-print-directory fabric-suites FABRIC_SOFT="$(KERNEL_TEST_SOFT)"

# The N-guest fabric (tests/kernel/run-n.sh, each in a network namespace of
# its own): four guests on one ivshmem server, all to all, one powered off
# mid-run ($(BUILD)/results/kernel-n-all.txt), 1,024 connections between two
# guests plus one past the slices (kernel-n-scale.txt), and a Redis Cluster
# across four guests, one master powered off (kernel-n-redis.txt).  Part of
# test-kernel.
FABRIC_SUITES = 4:all 2:scale 4:redis
.PHONY: fabric-suites
fabric-suites: driver $(HOOK_SO)
	@for s in $(FABRIC_SUITES); do tests/kernel/run-n.sh $(BUILD) $${s%%:*} $${s#*:} $(FABRIC_SOFT) || exit 1; done

# test-fabric: the issue's fabric tests alone: the 8-port mock (the one-guest
# suite's multiport group), the two-guest suite (both fabrics in one
# process among its tests) and the N-guest suites; one line at the end.
test-fabric: driver $(CTL_BIN) $(HOOK_SO)
	@SCILAN_GUEST_ONLY=multiport tests/kernel/run.sh $(BUILD) || true
	@tests/kernel/run-two.sh $(BUILD) || true
	@$(MAKE) --no-print-directory fabric-suites FABRIC_SOFT="|| true"
	@cat $(BUILD)/results/kernel.txt $(BUILD)/results/kernel-two.txt \
		$(foreach s,$(FABRIC_SUITES),$(BUILD)/results/kernel-n-$(lastword $(subst :, ,$(s))).txt) 2>/dev/null | \
		awk '{ p += $$3; f += $$4 } $$4 > 0 { print "FAILED: " $$2 } END { printf "fabric: %d passed, %d failed\n", p, f; exit (f > 0 || p == 0) }'

# test-moves: the tests of connections that change transport, alone: the
# link cut under a program in each way of waiting (the one-guest suite's
# linkcut group: fail-over to kernel TCP), the two-guest suite (the device
# fabric's agreement: raw and io_uring acceptors on the peer node), and the
# shm fabric's promotion (the seam, the switch, the connection's part, its
# triggers, kill -9 during moves, unmodified programs under the hook); one
# line at the end.  The guest suites are part of test-kernel, the others of
# test-native and test-hook.
MOVES_SHM := ^(unit/test_(seam|promote_switch)|integration/test_(promote|promote_trigger|kill9))$$
test-moves: driver $(CTL_BIN) $(HOOK_SO) tests hooktests
	@SCILAN_GUEST_ONLY=linkcut tests/kernel/run.sh $(BUILD) || true
	@tests/kernel/run-two.sh $(BUILD) || true
	@scripts/run-tests.sh $(BUILD)/tests moves-shm $(BUILD)/results '$(MOVES_SHM)'
	@scripts/run-tests.sh $(HOOKTEST_DIR) moves-hook $(BUILD)/results '^test_promotion$$'
	@cat $(BUILD)/results/kernel.txt $(BUILD)/results/kernel-two.txt \
		$(BUILD)/results/moves-shm.txt $(BUILD)/results/moves-hook.txt 2>/dev/null | \
		awk '{ p += $$3; f += $$4 } $$4 > 0 { print "FAILED: " $$2 } END { printf "moves: %d passed, %d failed\n", p, f; exit (f > 0 || p == 0) }'

# scilan (polling, interrupt) against kernel TCP over virtio-net between the
# same two guests, longer runs than the test; the table lands in
# $(BUILD)/results/bench-kernel-two.md (TCG: compare ratios, not times).
# Then the N-guest benches (tests/kernel/bench-n.sh: round trips of every
# ordered pair of 4 guests, fan-in of 3 into 1, 1,024 connections against
# one) into $(BUILD)/results/bench-kernel-n.md.
bench-kernel: driver $(HOOK_SO)
	@tests/kernel/run-two.sh $(BUILD) --bench
	@tests/kernel/bench-n.sh $(BUILD)

EXTRA_TESTS += test-kernel
