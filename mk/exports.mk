# exports.mk — test-exports: each shared library exports exactly its version
# script (libscilan/libscilan.map, hook/preload.map), also when a command
# line's CFLAGS replace the Makefile's, and each script matches what the
# sources declare, and no shipped library carries test-only code
# (tests/exports/check.sh).

.PHONY: test-exports
test-exports:
	@tests/exports/check.sh $(BUILD)/results

EXTRA_TESTS += test-exports
