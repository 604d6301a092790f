# redis-cluster.sh — init-n's "redis" scenario, sourced by init-n on each of
# 4 guests: a Redis Cluster of three masters (guests 0-2) under the hook,
# created, benchmarked, loaded with a checked key set and read back from
# every guest; the cluster bus and every client connection accelerated.
# Then guest 3 pulls its ivshmem cable for 2 s under a benchmark: its
# connections fail over to kernel TCP with no client error.  Then guest 2
# powers off: only the connections to it end.  Uses init-n's
# id, n, state, result and bar.

rdir=/tmp/redis
rport=7000
masters="10.79.0.1 10.79.0.2 10.79.0.3"
nkeys=1000
bench_n=3000 bench_c=6
cut_n=30000
hook="LD_PRELOAD=/lib/libscilan_preload.so SCILAN_LOG=notice SCILAN_CONF=/tmp/n.conf SCILAN_RUNDIR=/tmp/scilan SCILAN_STATS=stderr"
mkdir -p $rdir/cli
insmod /lib/inet_diag.ko && insmod /lib/tcp_diag.ko || result diag_modules FAIL "insmod inet_diag, tcp_diag"
# A peer is lost when its heartbeat stands still for this long: 1 s (the
# default) is shorter than a TCG guest's stalls on a loaded host, which
# would reset the live peers' connections as well; 5 s is not.  (The "all"
# scenario keeps 1 s: its victim's connections must end by link-down before
# the library's 3 s stall rule moves them to a kernel TCP that never ends.)
echo 5000 >/sys/module/scilan/parameters/ivshmem_timeout_ms

# cli ARGS...: redis-cli under the hook; each run's stderr (its statistics
# line) kept in a file of its own in $rdir/cli (numbered through a file: it
# runs in pipelines' subshells too); ncli: how many ran.
echo 0 >$rdir/cli.n
cli() {
	cn=$(($(cat $rdir/cli.n) + 1))
	echo $cn >$rdir/cli.n
	timeout 120 env $hook redis-cli "$@" 2>$rdir/cli/$cn.err
}
ncli() { cat $rdir/cli.n; }

# The hook's statistics lines of FILEs; stat_sum FIELD FILE...: FIELD
# (accelerated|fallback|tx|rx) summed over them; stat_reasons FILE...: the
# fallback reasons they name.
stat_lines() {
	cat "$@" 2>/dev/null | grep -ao 'scilan: pid [0-9]*: accelerated [0-9]*, fallback [0-9]*, tx [0-9]* bytes, rx [0-9]* bytes'
}
stat_sum() {
	f=$1
	shift
	stat_lines "$@" | awk -v f="$f" '{ for (i = 1; i < NF; i++) if ($i == f) { v = $(i + 1); sub(/,$/, "", v); s += v } }
		END { printf "%d\n", s }'
}
stat_reasons() {
	cat "$@" 2>/dev/null | grep -ao 'fallback reasons: [a-z0-9 ,-]*[0-9]' | sed 's/.*: //' | tr ',' '\n' |
		awk 'NF == 2 { n[$1] += $2 } END { for (r in n) { printf "%s %s %d", s ? "," : "; fallback reasons:", r, n[r]; s = 1 } }'
}
# stderr_of WHO FILE...: whatever else the processes said on stderr, for the
# console log.
stderr_of() {
	who=$1
	shift
	cat "$@" 2>/dev/null | grep -av 'scilan: pid [0-9]*: accelerated' | head -20 | sed "s/^/scilan-guest: $who: /"
}

# check_stats NAME WHO PROCS MIN_ACCEL FILE...: the PROCS processes whose
# stderr FILEs hold printed a statistics line each, accelerated at least
# MIN_ACCEL connections in all and fell back for none but those of the
# reasons $allow lists, if set.
check_stats() {
	name=$1 who=$2 procs=$3 min=$4
	shift 4
	lines=$(stat_lines "$@" | wc -l) acc=$(stat_sum accelerated "$@") fb=$(stat_sum fallback "$@")
	allowed=$(stat_reasons "$@" | tr ':,' '\n\n' |
		awk -v a=" ${allow:-} " 'index(a, " " $1 " ") { s += $2 } END { print s + 0 }')
	detail="$who: $lines statistics lines of $procs processes, accelerated $acc (>= $min), fallback $fb, tx $(stat_sum tx "$@"), rx $(stat_sum rx "$@") bytes$(stat_reasons "$@")"
	stderr_of "$who" "$@"
	[ "$lines" = "$procs" ] && [ "$acc" -ge "$min" ] && [ "$fb" = "$allowed" ] && result $name PASS "$detail" ||
		result $name FAIL "$detail"
}

# The key set: "ks:I VALUE" lines, values of 13 to 205 bytes, in the order
# of their hash slots (asked of the server at $1), so a redis-cli -c pass
# is redirected (and reconnects) only where the slots pass to another master.
key_set() {
	awk -v n=$nkeys 'BEGIN { for (i = 0; i < n; i++) { v = "v" i ":"
		for (j = 0; j <= i % 24; j++) v = v sprintf("%08x", (i * 2654435761 + j * 40503) % 2147483648)
		print "ks:" i, v } }' >$rdir/keys
	awk '{ print "CLUSTER KEYSLOT", $1 }' $rdir/keys | cli -h $1 -p $rport --raw >$rdir/slots
	paste -d' ' $rdir/slots $rdir/keys | sort -n -k1,1 >$rdir/sorted
	awk '{ print $3 }' $rdir/sorted >$rdir/expected
}

# read_keys NAME MASTER: every key through MASTER (redis-cli -c follows the
# redirections), every value compared with the one written.
read_keys() {
	awk '{ print "GET", $2 }' $rdir/sorted | cli -c -h $2 -p $rport --raw >$rdir/got.raw
	redirs=$(grep -c '^-> Redirected' $rdir/got.raw)
	grep -v '^-> Redirected' $rdir/got.raw >$rdir/got
	bad=$(paste -d' ' $rdir/expected $rdir/got | awk '$1 != $2 { b++ } END { print b + 0 }')
	got=$(wc -l <$rdir/got)
	[ "$got" = $nkeys ] && [ "$bad" = 0 ] && [ -s $rdir/expected ] &&
		result $1 PASS "$nkeys values read through $2 ($redirs redirections), each equal to the one written (md5 $(md5sum <$rdir/got | cut -c1-12))" ||
		result $1 FAIL "through $2: $got of $nkeys values, $bad differ from the ones written"
}

# The power-off round: guest 2 (a master) powers off while redis-cli
# sessions hold connections to every master (guest 3) and between masters 0
# and 1; each session is a redis-cli reading ECHO commands from a FIFO, one
# before the power-off and one after, on its one connection.
# session_open NAME HOST FD: the session NAME to HOST, written through FD.
session_open() {
	mkfifo $rdir/$1.in
	# Without the other sessions' FIFO write ends (theirs to close).
	timeout 120 env $hook redis-cli -h $2 -p $rport <$rdir/$1.in >$rdir/$1.out 2>$rdir/$1.err 5>&- 6>&- 7>&- &
	# Read-write: a FIFO's write-only open waits for the reader, and a
	# child's SIGCHLD meanwhile failed it (EINTR), which ended the shell.
	eval "${1}_pid=\$! ${1}_fd=$3; exec $3<>\$rdir/$1.in"
	echo "ECHO before-$1" >&$3
}
# session_said NAME WORD: WORD is the session's last line of output, within
# 60 s.
session_said() {
	for t in $(seq 600); do
		[ "$(tail -n 1 $rdir/$1.out 2>/dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# session_close NAME: the ECHO after the power-off, then end of input;
# closed_rc: redis-cli's exit status (124 or 143: the timeout ended it).
# Not in a subshell: the FIFO's write end and the child are this shell's.
session_close() {
	eval "fd=\$${1}_fd pid=\$${1}_pid"
	echo "ECHO after-$1" >&$fd
	eval "exec $fd>&-"
	wait $pid
	closed_rc=$?
}
# bus_links OTHER: "direction node create-time" of this master's cluster bus
# links with the master at OTHER.
bus_links() {
	other_id=$(cli -h $1 -p $rport cluster myid)
	cli -h $me -p $rport --raw cluster links |
		awk -v o="$other_id" 'k == "direction" { d = $0 } k == "node" { n = $0 }
			k == "create-time" && n == o { print d, n, $0 } { k = $0 }' | sort
}
# killed_link_down: the link to guest 2 goes down within 60 s (the other
# links stay up).
killed_link_down() {
	for t in $(seq 600); do
		grep -q '^link down' $state/scilan$((2 - (2 > id)))/state && break
		sleep 0.1
	done
	down=0 up=0
	for p in $(seq 0 $((n - 1))); do
		[ "$p" = "$id" ] && continue
		l=$(sed -n 's/^link //p' $state/scilan$((p - (p > id)))/state)
		[ "$p" = 2 ] && [ "$l" = down ] && down=1
		[ "$p" != 2 ] && [ "$l" = up ] && up=$((up + 1))
	done
	[ $down = 1 ] && [ $up = $((n - 2)) ] && result kill_links PASS "the link to guest 2 down, the $up others up" ||
		result kill_links FAIL "link to guest 2 down: $down, links to the others up: $up of $((n - 2))"
}
# survivor_sessions NAME...: each session to a live master answered its
# ECHO before and after the power-off on its one connection, without error.
survivor_sessions() {
	ok=1 detail=
	for s in "$@"; do
		session_close $s
		rc=$closed_rc
		got=$(tr '\n' ' ' <$rdir/$s.out)
		acc=$(stat_sum accelerated $rdir/$s.err) fb=$(stat_sum fallback $rdir/$s.err)
		detail="$detail $s: exit $rc, said '$got', accelerated $acc fallback $fb;"
		[ "$rc" = 0 ] && [ "$got" = "before-$s after-$s " ] && [ "$acc" = 1 ] && [ "$fb" = 0 ] &&
			! grep -aq '^Error' $rdir/$s.err || ok=0
		stderr_of $s $rdir/$s.err
	done
	[ $ok = 1 ] && result kill_survivors_carried_on PASS "each session's one connection answered before and after:$detail" ||
		result kill_survivors_carried_on FAIL "$detail"
}

master() {
	me=10.79.0.$((id + 1))
	env $hook redis-server --port $rport --bind $me --protected-mode no --cluster-enabled yes \
		--cluster-config-file $rdir/nodes.conf --cluster-node-timeout 60000 --save '' --appendonly no \
		--daemonize no --dir $rdir --logfile $rdir/server.log >/dev/null 2>$rdir/server.err &
	srv=$!
	up=0
	for t in $(seq 300); do
		netstat -ltn | grep -q " $me:$rport " && netstat -ltn | grep -q " $me:1$rport " && { up=1; break; }
		sleep 0.1
	done
	[ $up = 1 ] && result server_up PASS "redis-server (cluster-enabled) listening on $me:$rport and the bus on :1$rport" ||
		result server_up FAIL "redis-server not listening on $me:$rport and :1$rport; $(tail -3 $rdir/server.log)"
	bar redis-up 4
	# Guest 3 created the cluster and saw every master's four bus links:
	# the only connections between master guests, each to hold a slice of
	# the link to its peer.
	bar redis-ok 4
	busy= ok=1
	for p in 0 1 2; do
		[ "$p" = "$id" ] && continue
		b=$(sed -n 's/^slices_busy //p' $state/scilan$((p - (p > id)))/state)
		busy="$busy node $p: ${b:-none};"
		[ "${b:-0}" -ge 2 ] || ok=0
	done
	[ $ok = 1 ] && result bus_accelerated PASS "slices busy on the links to the other masters (2 bus connections each):$busy" ||
		result bus_accelerated FAIL "wanted >= 2 slices busy on each link to another master:$busy"
	bar redis-bus 4
	bar redis-keys 4
	key_set $me
	read_keys keys_read 10.79.0.$(((id + 1) % 3 + 1))
	check_stats reader_stats redis-cli $(ncli) $(ncli) $rdir/cli/*.err
	bar redis-read 4
	bar redis-cut 4

	if [ "$id" = 2 ]; then
		bar redis-sessions 4
		bar redis-kill 4
		result kill_powered_off PASS "powering off (poweroff -f) with the cluster bus and guest 3's session up"
		echo "scilan-guest: done"
		poweroff -f
	fi
	other=10.79.0.$((2 - id))
	session_open peer_n$((1 - id)) $other 5
	session_said peer_n$((1 - id)) before-peer_n$((1 - id)) || echo "scilan-guest: no answer before the power-off"
	bus_links $other >$rdir/bus.before
	bar redis-sessions 4
	bar redis-kill 4
	killed_link_down
	survivor_sessions peer_n$((1 - id))
	bus_links $other >$rdir/bus.after
	[ "$(wc -l <$rdir/bus.before)" = 2 ] && cmp -s $rdir/bus.before $rdir/bus.after &&
		result kill_bus_carried_on PASS "the bus links with $other (to and from) kept their creation times: the same connections" ||
		result kill_bus_carried_on FAIL "bus links with $other before: $(tr '\n' ';' <$rdir/bus.before) after: $(tr '\n' ';' <$rdir/bus.after)"
	peer_events
	bar redis-killed 3
	kill -TERM $srv
	wait $srv
	rc=$?
	tail -2 $rdir/server.log | sed 's/^/scilan-guest: redis-server: /'
	# Its connections: the bus's 4, the cluster create's 1 and the
	# benchmark's 2 per test (6 clients over 3 masters), at the least.
	[ $rc = 0 ] || result server_exit FAIL "redis-server exit status $rc on SIGTERM"
	# Its fallbacks, all with the powered-off master: its two bus
	# connections there, stalled (the peer took nothing for 3 s) before the
	# link went down, and the reconnections, which find the link down.
	stalled=$(stat_reasons $rdir/server.err | tr ':,' '\n\n' | awk '$1 == "stalled" { print $2 }')
	[ "${stalled:-0}" -le 2 ] || result server_stalled FAIL "$stalled connections stalled; 2 went to the powered-off master"
	allow="link-down stalled" check_stats server_stats redis-server 1 $((4 + 1 + 2 * bench_c / 3)) $rdir/server.err
}

client() {
	bar redis-up 4
	timeout 180 env $hook redis-cli --cluster create $(for m in $masters; do printf '%s:%s ' $m $rport; done) \
		--cluster-replicas 0 --cluster-yes >$rdir/create.out 2>$rdir/cli/1.err
	rc=$?
	echo 1 >$rdir/cli.n
	grep -q 'All 16384 slots covered' $rdir/create.out && [ $rc = 0 ] &&
		result cluster_create PASS "redis-cli --cluster create: 3 masters, all 16384 slots covered" ||
		result cluster_create FAIL "redis-cli --cluster create exit $rc: $(tail -3 $rdir/create.out | tr '\n' ' ')"
	# cluster_state:ok and the bus's four links (to and from each other
	# master) on every master.
	for what in state links; do
		pending=$masters
		for t in $(seq 60); do
			left=
			for m in $pending; do
				if [ $what = state ]; then
					cli -h $m -p $rport cluster info | grep -q '^cluster_state:ok' || left="$left $m"
				else
					dirs=$(cli -h $m -p $rport --raw cluster links | awk 'prev == "direction" { print } { prev = $0 }' |
						sort | uniq -c | tr -s ' \n' '  ')
					[ "$dirs" = " 2 from 2 to " ] || left="$left $m"
				fi
			done
			pending=$left
			[ -z "$pending" ] && break
			sleep 1
		done
		[ -z "$pending" ] && result cluster_$what PASS "every master: $([ $what = state ] && echo cluster_state:ok || echo 2 bus links to and 2 from the other masters)" ||
			result cluster_$what FAIL "not on:$pending"
	done
	bar redis-ok 4
	bar redis-bus 4

	timeout 200 env $hook redis-benchmark --cluster -h 10.79.0.1 -p $rport -n $bench_n -c $bench_c -t set,get -q \
		>$rdir/bench.out 2>$rdir/bench.err
	rc=$?
	tr '\r' '\n' <$rdir/bench.out | grep -a 'requests per second' | sed 's/^/scilan-guest: redis-benchmark: /'
	[ $rc = 0 ] && [ "$(tr '\r' '\n' <$rdir/bench.out | grep -acE '^(SET|GET): .*requests per second')" = 2 ] &&
		result benchmark PASS "redis-benchmark --cluster -n $bench_n -c $bench_c -t set,get finished both tests" ||
		result benchmark FAIL "redis-benchmark exit $rc: $(tr '\r' '\n' <$rdir/bench.out | tail -3 | tr '\n' ' ')"
	# What the masters counted: every request of the benchmark, no more.
	sets=0 gets=0 per=
	for m in $masters; do
		cli -h $m -p $rport --raw info commandstats >$rdir/cmdstat
		s=$(sed -n 's/^cmdstat_set:calls=\([0-9]*\),.*/\1/p' $rdir/cmdstat)
		g=$(sed -n 's/^cmdstat_get:calls=\([0-9]*\),.*/\1/p' $rdir/cmdstat)
		sets=$((sets + ${s:-0})) gets=$((gets + ${g:-0})) per="$per $m: ${s:-0} SET ${g:-0} GET;"
	done
	[ $sets = $bench_n ] && [ $gets = $bench_n ] &&
		result benchmark_commands PASS "the masters served $sets SET and $gets GET:$per" ||
		result benchmark_commands FAIL "wanted $bench_n SET and GET, the masters served$per"
	# The clients' requests and replies (RESP, at least 45 and 36 bytes for
	# SET and GET, replies at least 5) on the rings; its connections: one
	# for the cluster's map, one per master for its configuration, and 6
	# clients for each test.
	check_stats benchmark_stats redis-benchmark 1 $((2 * bench_c + 1)) $rdir/bench.err
	tx=$(stat_sum tx $rdir/bench.err) rx=$(stat_sum rx $rdir/bench.err)
	[ "$tx" -ge $((bench_n * (45 + 36))) ] && [ "$rx" -ge $((bench_n * 10)) ] &&
		result benchmark_bytes PASS "tx $tx bytes >= $((bench_n * 81)), rx $rx >= $((bench_n * 10)) on the rings" ||
		result benchmark_bytes FAIL "tx $tx bytes (wanted >= $((bench_n * 81))), rx $rx (>= $((bench_n * 10))) on the rings"

	key_set 10.79.0.1
	awk '{ print "SET", $2, $3 }' $rdir/sorted | cli -c -h 10.79.0.1 -p $rport --raw >$rdir/set.out
	oks=$(grep -cx OK $rdir/set.out)
	[ "$oks" = $nkeys ] && result keys_written PASS "$nkeys keys SET through redis-cli -c, each OK" ||
		result keys_written FAIL "$oks of $nkeys SETs answered OK"
	total=0 per= ok=1
	for m in $masters; do
		k=$(cli -h $m -p $rport --raw keys 'ks:*' | wc -l)
		total=$((total + k)) per="$per $m: $k;"
		[ "$k" -gt 0 ] || ok=0
	done
	[ $ok = 1 ] && [ $total = $nkeys ] && result keys_spread PASS "every master holds some of the $nkeys keys:$per" ||
		result keys_spread FAIL "wanted $nkeys keys over all three masters:$per"
	bar redis-keys 4
	for m in $masters; do
		read_keys keys_read_n$((${m##*.} - 1)) $m
	done
	check_stats client_stats redis-cli $(ncli) $(ncli) $rdir/cli/*.err
	bar redis-read 4
	cable_cut
	bar redis-cut 4

	fd=5
	for m in $masters; do
		session_open n$((${m##*.} - 1)) $m $fd
		fd=$((fd + 1))
	done
	for s in n0 n1 n2; do
		session_said $s before-$s || echo "scilan-guest: session $s: no answer before the power-off"
	done
	bar redis-sessions 4
	bar redis-kill 4
	killed_link_down
	survivor_sessions n0 n1
	# The session to the powered-off master: its connection ends, nothing
	# answers the ECHO after (redis-cli then reads its end of input).
	session_close n2
	rc=$closed_rc
	got=$(tr '\n' ' ' <$rdir/n2.out)
	stderr_of n2 $rdir/n2.err
	[ "$got" = "before-n2 " ] && [ "$rc" != 124 ] && [ "$rc" != 143 ] && grep -aq '^Error' $rdir/n2.err &&
		result kill_victim_conns_ended PASS "the session to the powered-off master ended: exit $rc, said '$got', $(grep -a '^Error' $rdir/n2.err | head -1)" ||
		result kill_victim_conns_ended FAIL "the session to the powered-off master: exit $rc, said '$got'"
	peer_events
	bar redis-killed 3
}

# The cable cut under load: guest 3 pulls its ivshmem cable for 2 s in the
# middle of a benchmark; its connections to the masters fail over to kernel
# TCP (virtio-net stays up): no client error, every test finished, the key
# set read back intact after; then the cable goes back and the links come up.
cable_cut() {
	cut=/sys/module/scilan/parameters/ivshmem_cut
	timeout 300 env $hook redis-benchmark --cluster -h 10.79.0.1 -p $rport -n $cut_n -c $bench_c -t set,get -q \
		>$rdir/cut.out 2>$rdir/cut.err &
	bpid=$!
	sleep 2
	echo 1 >$cut
	sleep 2
	echo 0 >$cut
	wait $bpid
	rc=$?
	tr '\r' '\n' <$rdir/cut.out | grep -a 'requests per second' | sed 's/^/scilan-guest: redis-benchmark (cut): /'
	stderr_of "redis-benchmark (cut)" $rdir/cut.err
	moved=$(stat_reasons $rdir/cut.err | tr ':,' '\n\n' | awk '$1 == "link-down" { print $2 }')
	[ $rc = 0 ] && [ "$(tr '\r' '\n' <$rdir/cut.out | grep -acE '^(SET|GET): .*requests per second')" = 2 ] &&
		! grep -aqi 'error' $rdir/cut.out && [ "${moved:-0}" -ge 1 ] &&
		result cut_benchmark PASS "redis-benchmark -n $cut_n across a 2 s cable cut: both tests finished, no error, ${moved} connections failed over (link-down)$(stat_reasons $rdir/cut.err)" ||
		result cut_benchmark FAIL "redis-benchmark exit $rc, failed over ${moved:-0}: $(tr '\r' '\n' <$rdir/cut.out | tail -3 | tr '\n' ' ')$(stat_reasons $rdir/cut.err)"
	up=0
	for t in $(seq 600); do
		up=$(grep -l '^link up' $state/scilan*/state 2>/dev/null | wc -l)
		[ "$up" = $((n - 1)) ] && break
		sleep 0.1
	done
	[ "$up" = $((n - 1)) ] && result cut_links_up PASS "the cable back: the $up links up again" ||
		result cut_links_up FAIL "the cable back: $up of $((n - 1)) links up after 60 s"
	read_keys keys_read_after_cut 10.79.0.2
}

# The links' comings and goings, for the console log.
peer_events() { dmesg | grep -aE 'ivshmem peer [0-9]+ (stopped|left)' | sed 's/^/scilan-guest: /'; }

if [ "$n" != 4 ]; then
	result scenario FAIL "the redis scenario wants 4 guests, not $n"
elif [ "$id" -lt 3 ]; then
	master
else
	client
fi
bar redis-end 3
