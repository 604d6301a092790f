# cpython.mk — test-cpython: CPython's own socket test suites (Debian's
# libpython3.11-testsuite) on kernel TCP and under scilan_run, case by case
# (tests/cpython); part of `make test`, counted by the summary.

.PHONY: test-cpython

# Alone, a regression fails the make; inside `make test` it is counted by
# test-summary.sh and the other suites still run.
CPYTHON_TEST_SOFT = $(if $(filter test-native,$(MAKECMDGOALS)),|| true)
test-cpython: hook
	@echo "== [cpython] CPython's socket suites, kernel TCP and scilan (tests/cpython)"
	@tests/cpython/run.sh $(BUILD) $(BUILD)/results $(CPYTHON_SUITES) $(CPYTHON_TEST_SOFT)

EXTRA_TESTS += test-cpython
