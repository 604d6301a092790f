#!/usr/bin/env bash
# tests/apps/mariadb.sh — a private mariadbd (its own data directory, loopback
# port) with mysqlslap and the mariadb client over TCP: generated load, rows
# whose counts and sums are checked, a 1 MB value both ways; kernel and scilan.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init mariadb

DATA=$WORK/data
SOCK=$WORK/mysqld.sock
# As root, mariadbd refuses to run unless told to stay root (the hook withdraws
# the listeners of a process that changes user: it must not switch to mysql).
AS_USER=()
[ "$(id -u)" -eq 0 ] && AS_USER=(--user=root)
# Small logs and buffer pool: the instance is created in well under a second.
SMALL=(--innodb-log-file-size=8M --innodb-buffer-pool-size=32M)

timeout -k 5 120 mariadb-install-db --no-defaults --datadir="$DATA" "${AS_USER[@]}" \
	--auth-root-authentication-method=normal --skip-test-db "${SMALL[@]}" \
	>"$WORK/install.log" 2>&1 || { tail -n 20 "$WORK/install.log" >&2; exit 1; }

# server MODE: mariadbd on a free port, up when it is ready; its death before
# that fails the case with the end of its log (e.g. "Can't initialize timers").
server() {
	local i
	PORT=$(free_port)
	# No socket or log of the last instance to be taken for this one's.
	rm -f "$SOCK" "$WORK/srv.err"
	daemon srv "$1" mariadbd --no-defaults --datadir="$DATA" --socket="$SOCK" --port="$PORT" \
		--bind-address=127.0.0.1 --skip-name-resolve --pid-file="$WORK/mysqld.pid" \
		--tmpdir="$WORK" "${AS_USER[@]}" "${SMALL[@]}"
	# Ready when it says so: its Unix socket comes after the TCP listener.
	for ((i = 0; i < 60 * 20; i++)); do
		grep -aq 'ready for connections' "$WORK/srv.err" 2>/dev/null && break
		if ! kill -0 "${DPID[srv]}" 2>/dev/null; then
			echo "mariadbd exited before it was ready:" >&2
			tail -n 5 "$WORK/srv.err" >&2
			return 1
		fi
		sleep 0.05
	done
	wait_listen "$PORT" 1
	# The account of the TCP clients, made over the Unix socket by a plain
	# client (root@localhost has no password).
	timeout -k 5 20 mariadb --no-defaults -S "$SOCK" -u root -e \
		"CREATE USER IF NOT EXISTS slap@'127.0.0.1' IDENTIFIED BY 'slap-pw';
		 GRANT ALL ON *.* TO slap@'127.0.0.1';"
}

# sql MODE NAME ARGS...: the mariadb client under MODE over TCP (stdin: the
# SQL), its output in $WORK/NAME.out, its stderr in $WORK/NAME.err.
sql() {
	local name=$2
	pre "$1"
	shift 2
	timeout -k 5 60 "${PRE[@]}" mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$PORT" \
		-u slap -pslap-pw --batch --skip-column-names "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" ||
		{ local rc=$?; cat "$WORK/$name.err" >&2; echo "mariadb $name exited with status $rc" >&2; return "$rc"; }
}

# server_stop MODE MIN_CONNECTIONS CLIENT_STDERR...: the server's line is
# printed when it exits (SIGTERM: a clean shutdown); it received over the
# rings at least what its clients sent there, and sent what they received.
server_stop() {
	local mode=$1 conns=$2
	shift 2
	stop srv TERM
	check_stats "$mode" server "$conns" "$(stat_sum rx "$@")" "$(stat_sum tx "$@")" "$WORK/srv.err"
}

# mysqlslap: 4 clients, each iteration connecting anew (create schema, load,
# drop): at least 4 x 2 accelerated connections on each end.
slap_case() {
	local mode=$1 q=4000 c=4 it=2
	server "$mode"
	pre "$mode"
	timeout -k 5 120 "${PRE[@]}" mysqlslap --no-defaults --protocol=tcp -h 127.0.0.1 -P "$PORT" \
		-u slap -pslap-pw --auto-generate-sql --auto-generate-sql-add-autoincrement \
		--concurrency="$c" --iterations="$it" --number-of-queries="$q" \
		>"$WORK/slap.out" 2>"$WORK/slap.err" ||
		{ local rc=$?; cat "$WORK/slap.err" >&2; echo "mysqlslap exited with status $rc" >&2; return "$rc"; }
	cat "$WORK/slap.out"
	grep -aq "Number of clients running queries: $c\$" "$WORK/slap.out" ||
		{ echo "no report of $c clients from mysqlslap" >&2; return 1; }
	check_stats "$mode" client $((c * it)) 1 1 "$WORK/slap.err"
	server_stop "$mode" $((c * it)) "$WORK/slap.err"
	echo "ok: mysqlslap $c clients x $it iterations, $q queries each, $(sed -n 's/.*Average number of seconds to run all queries: \(.*\)/\1/p' "$WORK/slap.out")"
}

# Rows made by the server (seq_1_to_N), changed, counted and summed; a 1 MB
# value sent in an INSERT and read back, compared by sha256 on both sides.
N=5000
query_case() {
	local mode=$1 db=t_${1//-/_} i b c sb=0 sc=0 sb2=0 sum
	for ((i = 1; i <= N; i++)); do
		b=$((i * i % 1000)) c=$((i % 100))
		sb=$((sb + b)) sc=$((sc + c))
		sb2=$((sb2 + b + (i % 2 == 0 ? 1 : 0)))
	done
	server "$mode"
	sql "$mode" rows <<SQL
DROP DATABASE IF EXISTS $db;
CREATE DATABASE $db;
USE $db;
CREATE TABLE t (id INT PRIMARY KEY, b INT NOT NULL, c VARCHAR(200) NOT NULL) ENGINE=InnoDB;
INSERT INTO t SELECT seq, seq * seq % 1000, REPEAT('x', seq % 100) FROM seq_1_to_$N;
SELECT COUNT(*), SUM(b), SUM(LENGTH(c)) FROM t;
UPDATE t SET b = b + 1 WHERE id % 2 = 0;
DELETE FROM t WHERE id > $N - 10;
SELECT COUNT(*), SUM(b) + (SELECT COUNT(*) FROM t WHERE id > $N - 10) FROM t;
SQL
	printf '%s\t%s\t%s\n' "$N" "$sb" "$sc" >"$WORK/rows.want"
	# The deleted rows' b, computed the server's way, added back by the query.
	local del=0
	for ((i = N - 9; i <= N; i++)); do del=$((del + i * i % 1000 + (i % 2 == 0 ? 1 : 0))); done
	printf '%s\t%s\n' $((N - 10)) $((sb2 - del)) >>"$WORK/rows.want"
	diff "$WORK/rows.want" "$WORK/rows.out" || { echo "counts and sums differ (want, got above)" >&2; return 1; }

	head -c 1000000 /dev/urandom | base64 -w0 >"$WORK/value"
	sum=$(sha "$WORK/value")
	{
		printf "CREATE TABLE %s.v (id INT PRIMARY KEY, v LONGTEXT) ENGINE=InnoDB;\n" "$db"
		printf "INSERT INTO %s.v VALUES (1, '%s');\n" "$db" "$(cat "$WORK/value")"
		printf "SELECT SHA2(v, 256) FROM %s.v;\n" "$db"
	} | sql "$mode" put
	expect "the server's sha256 of the value = the client's" "$(cat "$WORK/put.out")" = "$sum"
	sql "$mode" get --raw -e "SELECT v FROM $db.v WHERE id = 1"
	truncate -s -1 "$WORK/get.out" # the row's newline
	expect "value read = value written (sha256)" "$(sha "$WORK/get.out")" = "$sum"
	sql "$mode" drop -e "DROP DATABASE $db"

	check_stats "$mode" "client (rows)" 1 1 1 "$WORK/rows.err"
	check_stats "$mode" "client (put)" 1 1000000 1 "$WORK/put.err"
	check_stats "$mode" "client (get)" 1 1 1000000 "$WORK/get.err"
	server_stop "$mode" 4 "$WORK"/{rows,put,get,drop}.err
	echo "ok: $N rows counted and summed, 1 MB value both ways, sha256 equal"
}

for mode in $MODES; do
	run_case "$mode mariadb mysqlslap" slap_case "$mode"
	run_case "$mode mariadb queries" query_case "$mode"
done
apps_finish
