#!/usr/bin/env bash
# check.sh [RESULTS_FILE] — model-checks sleep_protocol.pml and set_queue.pml (no lost wake-up) and
# biased_lock.pml (mutual exclusion), fail_over.pml (a device link's fail-over to kernel TCP
# loses and duplicates no byte), promote.pml (the switch from kernel TCP onto the rings: no
# byte lost, doubled or reordered, no end left asleep) and promote_device.pml (that switch
# agreed through the device's drivers over a link that may be cut) with SPIN; each mutant must fail.
set -u
out=${1:+$(realpath -m "$1")}   # resolved before the cd below
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
verify() { # verify NAME [SPIN DEFINES...] -> prints pan's verdict, returns errors count
	local name=$1; shift
	local model=${MODEL:-sleep_protocol.pml}
	(cd "$work" && spin "$@" -a "$OLDPWD/$model" >/dev/null &&
		gcc -O2 -DSAFETY -o "pan_$name" pan.c 2>/dev/null && "./pan_$name" -m100000 >"$name.out" 2>&1)
	grep -o 'errors: [0-9]*' "$work/$name.out" | awk '{print $2}'
}
passed=0 failed=0
check() { # check NAME EXPECT(zero|nonzero) DEFINES...
	local name=$1 expect=$2; shift 2
	local errors; errors=$(verify "$name" "$@")
	if { [ "$expect" = zero ] && [ "$errors" = 0 ]; } || { [ "$expect" = nonzero ] && [ -n "$errors" ] && [ "$errors" != 0 ]; }; then
		echo "PASS model $name: errors=$errors (expected $expect)"; passed=$((passed + 1))
	else
		echo "FAIL model $name: errors=${errors:-none} (expected $expect)"; failed=$((failed + 1))
	fi
}
check protocol zero
check no_receiver_fence nonzero -DNO_RX_FENCE
check no_sender_fence nonzero -DNO_TX_FENCE
check membarrier zero -DMEMBARRIER
check membarrier_not_called nonzero -DMEMBARRIER -DNO_MEMBARRIER
check switch_to_fenced zero -DMEMBARRIER -DSWITCH
check switch_overtakes nonzero -DMEMBARRIER -DSWITCH -DSWITCH_OVERTAKES
check switch_back_unfenced nonzero -DMEMBARRIER -DSWITCH -DSWITCH_BACK_UNFENCED
MODEL=set_queue.pml check set_queue zero
MODEL=set_queue.pml check set_queue_no_tx_fence nonzero -DNO_TX_FENCE
MODEL=set_queue.pml check set_queue_armed_first nonzero -DARMED_FIRST
MODEL=set_queue.pml check set_queue_look_first nonzero -DLOOK_FIRST
MODEL=set_queue.pml check set_queue_unfenced zero -DUNFENCED
MODEL=set_queue.pml check set_queue_unfenced_no_membarrier nonzero -DUNFENCED -DNO_MEMBARRIER
MODEL=set_queue.pml check set_queue_unfenced_no_relook nonzero -DUNFENCED -DNO_RELOOK
MODEL=set_queue.pml check set_queue_switch zero -DUNFENCED -DSWITCH
MODEL=set_queue.pml check set_queue_switch_back_unfenced nonzero -DUNFENCED -DSWITCH -DSWITCH_BACK_UNFENCED
MODEL=set_queue.pml check set_queue_device zero -DDEVICE
MODEL=set_queue.pml check set_queue_device_no_readback nonzero -DDEVICE -DDEV_NO_READBACK
MODEL=set_queue.pml check set_queue_device_no_relook nonzero -DDEVICE -DNO_RELOOK
MODEL=set_queue.pml check set_queue_device_no_mark_fence nonzero -DDEVICE -DDEV_NO_MARK_FENCE
MODEL=biased_lock.pml check biased_lock zero
MODEL=biased_lock.pml check biased_lock_no_membarrier nonzero -DNO_MEMBARRIER
MODEL=fail_over.pml check fail_over zero
MODEL=fail_over.pml check fail_over_resend_from_write nonzero -DRESEND_FROM_WRITE
MODEL=fail_over.pml check fail_over_no_drop nonzero -DNO_DROP
MODEL=fail_over.pml check fail_over_publish_before_consume nonzero -DPUBLISH_BEFORE_CONSUME
MODEL=fail_over.pml check fail_over_no_tx_fence nonzero -DNO_TX_FENCE
MODEL=promote.pml check promote zero
MODEL=promote.pml check promote_mark_before_take nonzero -DMARK_BEFORE_TAKE
MODEL=promote.pml check promote_no_cross_check nonzero -DNO_CROSS_CHECK
MODEL=promote.pml check promote_ring_first nonzero -DRING_FIRST
MODEL=promote.pml check promote_hook_count nonzero -DHOOK_COUNT
MODEL=promote.pml check promote_no_marker nonzero -DNO_MARKER
MODEL=promote.pml check promote_no_bypass_check nonzero -DNO_BYPASS_CHECK
MODEL=promote_device.pml check promote_device zero
MODEL=promote_device.pml check promote_device_word_before_point zero -DWORD_BEFORE_POINT
MODEL=promote_device.pml check promote_device_plain_offer nonzero -DPLAIN_OFFER
MODEL=promote_device.pml check promote_device_no_abandon nonzero -DNO_ABANDON
MODEL=promote_device.pml check promote_device_publish_unanswered nonzero -DPUBLISH_UNANSWERED
MODEL=promote_device.pml check promote_device_point_before_answer nonzero -DPOINT_BEFORE_ANSWER
echo "model: $passed passed, $failed failed"
[ -n "$out" ] && { mkdir -p "$(dirname "$out")"; echo "model sleep_protocol.pml+set_queue.pml+biased_lock.pml+fail_over.pml+promote.pml+promote_device.pml $passed $failed" >"$out"; }
[ "$failed" -eq 0 ]
