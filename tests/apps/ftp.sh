#!/usr/bin/env bash
# tests/apps/ftp.sh — vsftpd with the ftp client (get, put, passive) and curl
# (get, active), 20 MB checked by sha256, on kernel TCP and under scilan_run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init ftp

SIZE=$((20 * 1000 * 1000))
mkdir -p "$WORK/root/up" "$WORK/empty"
chmod 755 "$WORK/root"
chmod 777 "$WORK/root/up"
head -c "$SIZE" /dev/urandom >"$WORK/root/file.bin"
SUM=$(sha "$WORK/root/file.bin")

server() { # MODE
	PORT=$(free_port)
	# run_as_launching_user: every vsftpd process stays this user (no
	# privilege-separated "nobody" helper; the hook withdraws the listeners
	# of a process that changes user).  isolate*: no private network
	# namespace for its helpers, which would not reach this namespace's
	# listeners.  seccomp off: its filter is made for the privilege-separated
	# model and kills the session process of this one, even on kernel TCP.
	cat >"$WORK/vsftpd.$PORT.conf" <<CONF
listen=YES
listen_ipv6=NO
listen_address=127.0.0.1
listen_port=$PORT
background=NO
run_as_launching_user=YES
isolate=NO
isolate_network=NO
seccomp_sandbox=NO
anonymous_enable=YES
no_anon_password=YES
anon_root=$WORK/root
write_enable=YES
anon_upload_enable=YES
anon_umask=022
local_enable=NO
pasv_enable=YES
port_enable=YES
connect_from_port_20=NO
secure_chroot_dir=$WORK/empty
check_shell=NO
userlist_enable=NO
tcp_wrappers=NO
xferlog_enable=NO
syslog_enable=NO
dual_log_enable=NO
vsftpd_log_file=$WORK/vsftpd.log
CONF
	daemon srv "$1" vsftpd "$WORK/vsftpd.$PORT.conf"
	wait_listen "$PORT"
}

# tnftp_session MODE COMMANDS: an anonymous, binary, passive session.
tnftp_session() {
	pre "$1"
	printf 'user anonymous x\nbinary\n%s\nquit\n' "$2" |
		timeout -k 5 60 "${PRE[@]}" ftp -n -v -p 127.0.0.1 "$PORT" >"$WORK/cli.out" 2>"$WORK/cli.err"
	cat "$WORK/cli.out"
	grep -aq '^226 ' "$WORK/cli.out" || { echo "no 226 Transfer complete" >&2; return 1; }
}

# Only the clients' statistics are checked: a standalone vsftpd session
# process has the control connection as its stdin, stdout and stderr (the
# inetd code path), so its statistics line goes to the client, not to us.
# A connection is accelerated only when both ends run scilan, so the
# clients' lines prove the server's side too.  Control plus data: 2.
get_case() {
	local mode=$1
	server "$mode"
	rm -f "$WORK/got.bin"
	tnftp_session "$mode" "get file.bin $WORK/got.bin"
	expect "sha256 of the file got = the server's" "$(sha "$WORK/got.bin")" = "$SUM"
	check_stats "$mode" client 2 0 "$SIZE" "$WORK/cli.err"
	echo "ok: ftp get (passive), 20 MB, sha256 equal"
}

put_case() {
	local mode=$1 up
	server "$mode"
	up="up/put.$mode.bin"
	tnftp_session "$mode" "put $WORK/root/file.bin $up"
	expect "sha256 of the file put = the client's" "$(sha "$WORK/root/$up")" = "$SUM"
	check_stats "$mode" client 2 "$SIZE" 0 "$WORK/cli.err"
	echo "ok: ftp put (passive), 20 MB, sha256 equal"
}

active_case() {
	local mode=$1
	server "$mode"
	pre "$mode"
	# -P -: active mode (PORT/EPRT), the server connects to the client.
	timeout -k 5 60 "${PRE[@]}" curl -sS --fail -P - -o "$WORK/got.bin" "ftp://127.0.0.1:$PORT/file.bin" \
		2>"$WORK/cli.err"
	expect "sha256 of the file got = the server's" "$(sha "$WORK/got.bin")" = "$SUM"
	check_stats "$mode" client 2 0 "$SIZE" "$WORK/cli.err"
	echo "ok: curl get (active), 20 MB, sha256 equal"
}

for mode in $MODES; do
	run_case "$mode ftp get" get_case "$mode"
	run_case "$mode ftp put" put_case "$mode"
	run_case "$mode curl ftp active get" active_case "$mode"
done
apps_finish
