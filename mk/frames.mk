# frames.mk — test-frames: no function of the library or the hook keeps a
# frame of 2 KiB or more (tests/frames/check_frames.sh), so the hook fits
# application threads with 16 KiB stacks.

.PHONY: test-frames
test-frames:
	@tests/frames/check_frames.sh $(BUILD)/results

EXTRA_TESTS += test-frames
