#!/usr/bin/env bash
# tests/apps/ssh.sh — OpenSSH (a private sshd, key login as root) with scp and
# rsync -e ssh of a generated file, both ends on kernel TCP and under scilan_run.
# Needs root (sshd's privilege separation); never touches the system service.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init ssh

SIZE=$((4 * 1024 * 1024))
if [ "$(id -u)" -ne 0 ]; then
	echo "ssh: sshd's privilege separation needs root" >&2
	exit 1
fi
# The pre-authentication child chroots there (Debian's privsep directory).
[ -d /run/sshd ] || mkdir -m 755 /run/sshd

ssh-keygen -q -t ed25519 -N '' -f "$WORK/hostkey"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/userkey"
cp "$WORK/userkey.pub" "$WORK/authorized_keys"
cat >"$WORK/sshd_config" <<EOF
HostKey $WORK/hostkey
AuthorizedKeysFile $WORK/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
Subsystem sftp internal-sftp
EOF
head -c "$SIZE" /dev/urandom >"$WORK/file"
SSH_OPTS=(-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes
	-o LogLevel=ERROR -i "$WORK/userkey")

# cli OUT ERR CMD...: a client command under its timeout; on failure its
# stderr and sshd's go to the case log.
cli() {
	local out=$1 err=$2 rc=0
	shift 2
	timeout -k 5 60 "$@" >"$out" 2>"$err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "$1 exited with status $rc; its stderr, then sshd's:" >&2
		tail -n 10 "$err" "$WORK/srv.err" >&2
		return "$rc"
	fi
}

server() { # MODE
	PORT=$(free_port)
	# sshd re-executes itself (by absolute path) for each connection.
	daemon srv "$1" /usr/sbin/sshd -D -e -f "$WORK/sshd_config" -p "$PORT"
	wait_listen "$PORT"
}

# The session ends (the connection served, sshd's children gone) before the
# listener is stopped: its statistics line and log then cover the transfer.
server_check() { # MODE
	stop srv TERM || true
	if grep -a -E 'preauth child terminated|dispatch_run_fatal|scilan: pid [0-9]*: (error|warning)' "$WORK/srv.err"; then
		echo "sshd logged a failure" >&2
		return 1
	fi
}

# On scilan the connection starts on the rings (the client's hook counts a
# connection that moved: fallback) and continues on kernel TCP from the
# moment sshd's pre-authentication child installs its seccomp filter
# (sandbox_calls.c): the filter would refuse what the rings need.  So the
# bulk transfer is not accelerated; what is asserted is that every byte
# arrives, nothing is reset, and the move happened.
client_check() { # MODE FILE...
	local mode=$1
	shift
	if [ "$mode" = kernel ]; then
		check_stats kernel client 0 0 0 "$@"
		return
	fi
	stat_lines_of "$@"
	expect "client statistics lines" "$(stat_lines "$@")" -ge 1
	expect "the ssh connection moved to kernel TCP (fallback)" "$(stat_sum fallback "$@")" -ge 1
	if grep -a -E 'scilan: pid [0-9]*: (error|warning)' "$@"; then
		echo "the client logged a scilan failure" >&2
		return 1
	fi
}

scp_case() { # MODE
	local mode=$1
	server "$mode"
	pre "$mode"
	rm -f "$WORK/got"
	cli "$WORK/cli.out" "$WORK/cli.err" "${PRE[@]}" scp -q "${SSH_OPTS[@]}" -P "$PORT" "$WORK/file" \
		"root@127.0.0.1:$WORK/got"
	expect "scp'd file = original (sha256)" "$(sha "$WORK/got")" = "$(sha "$WORK/file")"
	client_check "$mode" "$WORK/cli.err"
	server_check "$mode"
	echo "ok: $((SIZE >> 20)) MB by scp, sha256 equal"
}

rsync_case() { # MODE: a push and a pull
	local mode=$1
	server "$mode"
	pre "$mode"
	rm -f "$WORK/got" "$WORK/back"
	cli "$WORK/push.out" "$WORK/push.err" "${PRE[@]}" rsync -e "ssh -p $PORT ${SSH_OPTS[*]}" "$WORK/file" \
		"root@127.0.0.1:$WORK/got"
	expect "pushed file = original (sha256)" "$(sha "$WORK/got")" = "$(sha "$WORK/file")"
	cli "$WORK/pull.out" "$WORK/pull.err" "${PRE[@]}" rsync -e "ssh -p $PORT ${SSH_OPTS[*]}" \
		"root@127.0.0.1:$WORK/got" "$WORK/back"
	expect "pulled file = original (sha256)" "$(sha "$WORK/back")" = "$(sha "$WORK/file")"
	client_check "$mode" "$WORK/push.err"
	client_check "$mode" "$WORK/pull.err"
	server_check "$mode"
	echo "ok: $((SIZE >> 20)) MB pushed and pulled by rsync -e ssh, sha256 equal"
}

for mode in $MODES; do
	run_case "$mode scp" scp_case "$mode"
	run_case "$mode rsync -e ssh" rsync_case "$mode"
done
apps_finish
