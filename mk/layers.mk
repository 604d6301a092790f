# layers.mk — test-layers: a file of libscilan/src includes only from its own
# layer and the layers below it, and the hook only preload_api.h and the
# public scilan.h (scripts/check-layers.sh; ARCHITECTURE.md, "Layers").

.PHONY: test-layers
test-layers:
	@scripts/check-layers.sh $(BUILD)/results

EXTRA_TESTS += test-layers
