#!/usr/bin/env bash
# tests/apps/containers.sh — containers of one pod (one network namespace,
# pid, mount and user namespaces of their own): redis-server in one,
# redis-benchmark and a checksummed 1 MB value in the other.  Under podman
# (runc, an image made from this host's files, nothing pulled), or, where
# podman cannot run here, in namespaces made with unshare as a runtime
# makes them; the first line says which.  Cases: the pod, accelerated; two
# tenants whose user namespaces map different host uids (podman only):
# kernel TCP, reason unmapped-user, every byte intact.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init containers

NETNS=slct-$$
IMAGE=localhost/scilan-test-containers:$$
PORT=6379
# The host uids a container's root is, per tenant.
TENANT_A=100000 TENANT_B=200000

containers_cleanup() {
	if [ "${RUNTIME:-}" = podman ]; then
		podman rm -f -t 0 "${NETNS}-srv" >/dev/null 2>&1 || true
		podman rmi -f "$IMAGE" >/dev/null 2>&1 || true
	fi
	ip netns del "$NETNS" 2>/dev/null || true
	apps_cleanup
}
trap containers_cleanup EXIT

# The pod's network namespace: loopback only.
ip netns add "$NETNS"
ip -n "$NETNS" link set lo up

# The image: redis's programs and the libraries they load, from this host.
make_image() {
	local root=$WORK/image b l
	mkdir -p "$root/tmp" "$root/run"
	chmod 1777 "$root/tmp"
	for b in $(command -v redis-server redis-cli redis-benchmark) "$BUILD/bin/scilan_ctl"; do
		mkdir -p "$root$(dirname "$b")"
		cp -L "$b" "$root$b"
		for l in $(ldd "$b" | grep -o '/[^ ]*'); do
			mkdir -p "$root$(dirname "$l")"
			cp -Ln "$l" "$root$l"
		done
	done
	tar -C "$root" -cf "$WORK/image.tar" .
	podman import -q "$WORK/image.tar" "$IMAGE" >/dev/null
}

# podman's own runtime on Debian 12 (crun) refuses a host with cgroups v1
# and v2 mounted together; runc does not.  Limits no higher than ours: a
# runtime that may not raise them (no CAP_SYS_RESOURCE) fails otherwise.
PODMAN=(podman --runtime /usr/sbin/runc)
# Its default sysctls (ping_group_range) are the network namespace's, which
# the test made: a container in a user namespace of its own may not write them.
printf '[containers]\ndefault_sysctls = []\n' >"$WORK/containers.conf"
export CONTAINERS_CONF=$WORK/containers.conf
lower() { [ "$1" = unlimited ] || [ "$1" -gt "$2" ] && echo "$2" || echo "$1"; }
NOFILE=$(lower "$(ulimit -Hn)" 4096) NPROC=$(lower "$(ulimit -Hu)" 4096)
PODMAN_LIMITS=(--ulimit "nofile=$NOFILE:$NOFILE" --ulimit "nproc=$NPROC:$NPROC")

RUNTIME=namespaces
why="podman or runc not installed"
# CONTAINERS_RUNTIME=namespaces: the fallback even where podman runs.
if [ "${CONTAINERS_RUNTIME:-}" = namespaces ]; then
	why="CONTAINERS_RUNTIME=namespaces"
elif command -v podman >/dev/null && [ -x /usr/sbin/runc ]; then
	if ! make_image 2>"$WORK/image.err"; then
		why="podman import failed: $(tail -n 1 "$WORK/image.err")"
	elif ! "${PODMAN[@]}" run --rm "${PODMAN_LIMITS[@]}" --network "ns:/run/netns/$NETNS" "$IMAGE" \
		/usr/bin/redis-cli --version >/dev/null 2>"$WORK/probe.err"; then
		why="podman cannot run a container here: $(tail -n 1 "$WORK/probe.err")"
	else
		RUNTIME=podman
	fi
fi
if [ "$RUNTIME" = podman ]; then
	echo "containers: runtime podman ($("${PODMAN[@]}" --version), runc)"
else
	echo "containers: runtime namespaces made by the test (unshare), because $why"
fi

# ctr NAME TENANT [-i] CMD...: CMD in a container of the pod, under the hook,
# stdout and stderr in $WORK/NAME.out and .err.  TENANT: the host uid its
# root is (podman; 0: root), each container a runtime directory of its own,
# or the host's directory $SHARED, mounted into each, when it is set.
SHARED=
ctr() {
	local name=$1 tenant=$2 input=()
	shift 2
	if [ "$1" = -i ]; then
		input=(-i)
		shift
	fi
	if [ "$RUNTIME" = podman ]; then
		local map=() run=(--tmpfs /run/scilan:rw,mode=0700)
		[ "$tenant" -ne 0 ] && map=(--uidmap "0:$tenant:65536" --gidmap "0:$tenant:65536")
		[ -n "$SHARED" ] && run=(-v "$SHARED:/run/scilan")
		timeout -k 5 120 "${PODMAN[@]}" run --rm "${input[@]}" --name "${NETNS}-$name" "${PODMAN_LIMITS[@]}" \
			--network "ns:/run/netns/$NETNS" "${map[@]}" -v "$(dirname "$PRELOAD"):/scilan:ro" \
			"${run[@]}" -e LD_PRELOAD=/scilan/libscilan_preload.so \
			-e SCILAN_STATS=stderr -e SCILAN_RUNDIR=/run/scilan -e SCILAN_LOG=warn "$IMAGE" "$@" \
			>"$WORK/$name.out" 2>"$WORK/$name.err"
	else
		local rundir=${SHARED:-$WORK/rundir-$name}
		[ -d "$rundir" ] || mkdir -m 700 "$rundir"
		timeout -k 5 120 ip netns exec "$NETNS" unshare --user --map-root-user --pid --fork --mount-proc \
			--kill-child env LD_PRELOAD="$PRELOAD" SCILAN_STATS=stderr SCILAN_RUNDIR="$rundir" SCILAN_LOG=warn \
			"$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
	fi
}

# The server: redis-server in its own container, until redis_stop.
redis_start() { # TENANT
	ctr srv "$1" /usr/bin/redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no --logfile '' --dir /tmp &
	SRV=$!
	local i
	for ((i = 0; i < 400 && $(jobs -pr | grep -c "^$SRV$") > 0; i++)); do
		[ -n "$(ip netns exec "$NETNS" ss -Htln "sport = :$PORT")" ] && return 0
		sleep 0.05
	done
	echo "redis-server did not listen:" >&2
	cat "$WORK/srv.err" >&2
	return 1
}

# Asked from the pod's namespace (no hook): redis exits, printing its
# statistics line.
redis_stop() {
	ip netns exec "$NETNS" redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
	wait "$SRV"
}

# The client container's work: redis-benchmark, then a 1 MB value set and
# read back, compared by sha256.
client_work() { # TENANT
	local n=4000 sets gets
	ctr bench "$1" /usr/bin/redis-benchmark -p "$PORT" -n "$n" -c 4 -t set,get -q
	sets=$(tr '\r' '\n' <"$WORK/bench.out" | grep -c '^SET: .* requests per second' || true)
	gets=$(tr '\r' '\n' <"$WORK/bench.out" | grep -c '^GET: .* requests per second' || true)
	expect "redis-benchmark finished SET and GET" "$sets$gets" = 11
	head -c 786432 /dev/urandom | base64 -w0 >"$WORK/value"
	ctr set "$1" -i /usr/bin/redis-cli -p "$PORT" -x set big <"$WORK/value"
	expect "SET reply OK" "$(cat "$WORK/set.out")" = OK
	ctr get "$1" /usr/bin/redis-cli -p "$PORT" --raw get big
	truncate -s -1 "$WORK/get.out"
	expect "value read = value written (sha256)" "$(sha "$WORK/get.out")" = "$(sha "$WORK/value")"
	echo "ok: $(tr '\r' '\n' <"$WORK/bench.out" | grep 'requests per second' | awk '{printf "%s%s %s", s, $1, $2; s = ", "}') req/s"
}

pod_case() {
	redis_start "$TENANT_A"
	client_work "$TENANT_A"
	check_stats scilan client 4 0 0 "$WORK/bench.err"
	check_stats scilan "client (set, get)" 2 1048576 1048576 "$WORK/set.err" "$WORK/get.err"
	redis_stop
	check_stats scilan server 6 1048576 1048576 "$WORK/srv.err"
}

# Another tenant's client: neither end can tell who owns the other, so both
# stay on kernel TCP and say why, with every byte.
tenants_case() {
	redis_start "$TENANT_A"
	client_work "$TENANT_B"
	redis_stop
	local fb unmapped
	expect "no connection accelerated" "$(stat_sum accelerated "$WORK"/*.err)" = 0
	fb=$(stat_sum fallback "$WORK/bench.err" "$WORK/set.err" "$WORK/get.err")
	unmapped=$(stat_reasons "$WORK/bench.err" "$WORK/set.err" "$WORK/get.err" |
		awk '$1 == "unmapped-user" { print $2 }')
	expect "each client connection on kernel TCP, reason unmapped-user ($fb, ${unmapped:-0})" \
		"${unmapped:-0}" -ge 6 -a "${unmapped:-0}" -eq "$fb"
	echo "ok: $fb client connections on kernel TCP, unmapped-user"
}

# scilan_ctl stat --json as a process of the server's container runs it
# (its own pid namespace and /proc): output in $WORK/inside.json.
ctl_inside_srv() {
	if [ "$RUNTIME" = podman ]; then
		timeout -k 5 30 podman exec -e LD_PRELOAD= "${NETNS}-srv" "$BUILD/bin/scilan_ctl" --json stat \
			>"$WORK/inside.json"
	else
		local pid
		pid=$(pgrep -n -f "redis-server 127.0.0.1:$PORT|redis-server \*:$PORT|redis-server.*$PORT")
		timeout -k 5 30 nsenter --target "$pid" --pid --mount env SCILAN_RUNDIR="$SHARED" \
			"$BUILD/bin/scilan_ctl" --json stat >"$WORK/inside.json"
	fi
}

# Containers given one runtime directory (the host's, mounted into each):
# redis-server and redis-cli are each pid 1 of their own pid namespace, and
# each keeps its statistics file; scilan_ctl on the host lists both with
# their host pids and containers, inside the server's container only its own.
shared_case() {
	local json n host_ns
	SHARED=$WORK/shared
	mkdir -m 700 "$SHARED"
	redis_start 0
	ctr hold 0 /usr/bin/redis-cli -p "$PORT" -r 30 -i 0.1 ping &
	local hold=$! i
	for ((i = 0; i < 100; i++)); do
		[ "$(SCILAN_RUNDIR=$SHARED "$BUILD/bin/scilan_ctl" --json stat | jq '.connections | length')" = 2 ] && break
		sleep 0.05
	done
	json=$(SCILAN_RUNDIR=$SHARED "$BUILD/bin/scilan_ctl" --json stat)
	echo "$json"
	if [ "$RUNTIME" = podman ]; then
		podman ps --no-trunc --format '{{.ID}}' --filter "name=^${NETNS}-" | cut -c1-12 | sort >"$WORK/ids"
		echo "containers running: $(tr '\n' ' ' <"$WORK/ids")"
	fi
	SCILAN_RUNDIR=$SHARED "$BUILD/bin/scilan_ctl" stat
	ctl_inside_srv
	cat "$WORK/inside.json"
	wait "$hold"
	redis_stop
	host_ns=$(stat -Lc %i /proc/self/ns/pid)
	n=$(jq --argjson h "$host_ns" '[.connections[] | select(.accelerated and .ns_pid == 1
		and .pid_namespace != $h and .pid != 1)] | length' <<<"$json")
	expect "both ends listed from the host, pid 1 each in its own pid namespace" "$n" -eq 2
	n=$(jq '[.connections[].pid_namespace] | unique | length' <<<"$json")
	expect "two pid namespaces" "$n" -eq 2
	if [ "$RUNTIME" = podman ]; then
		expect "each end named by its podman container" \
			"$(jq -r '.connections[].container' <<<"$json" | sed -n 's/^libpod //p' | sort | tr '\n' ' ')" \
			= "$(tr '\n' ' ' <"$WORK/ids")"
	fi
	n=$(jq '[.connections[] | select(.pid == 1 and .comm == "redis-server")] | length' "$WORK/inside.json")
	expect "inside the server's container: its own end, as pid 1" "$n" -eq 1
	n=$(jq '.connections | length' "$WORK/inside.json")
	expect "inside the server's container: nothing of the other's" "$n" -eq 1
	echo "ok: two pid 1s listed from the host, one from inside"
}

run_case "pod: redis" pod_case
if [ "$RUNTIME" = podman ]; then
	run_case "tenants: redis, kernel TCP" tenants_case
fi
run_case "pod, one runtime directory: scilan_ctl" shared_case
apps_finish
