# bench_apps.mk — `make bench-apps` (issues 11, 24): PostgreSQL/pgbench, redis,
# memcached, gunicorn, nginx+php-fpm, varnish and sockperf's CPU cost on kernel TCP and
# under scilan_run in one run (perf/apps/servers.sh; table, CSV, PNG in build/perf/apps).

.PHONY: bench-apps-deps bench-apps

# Missing Debian packages (as root).  A program still missing afterwards is a
# "skipped" row of the report, not a failed make.
bench-apps-deps:
	@perf/apps/deps.sh || echo "bench-apps: packages missing; their rows will say skipped" >&2

# BENCH_SECS (default 12) and the other settings: perf/apps/servers.sh.
bench-apps: hook bench-apps-deps
	@SCILAN_BUILD=$(BUILD) perf/apps/servers.sh

# `make bench-scale` (issue 10): nginx+wrk at 100/1,000/10,000 keep-alive
# connections and redis -c 1 beside 5,000 idle clients (perf/apps/scale.sh).
.PHONY: bench-scale
bench-scale: hook bench-apps-deps
	@SCILAN_BUILD=$(BUILD) perf/apps/scale.sh
