# perf/epoll/epoll.gp — the bench-epoll plot: round-trip p50 per transport
# against the number of connections in the set (log-log).
#   gnuplot -e "csv='build/perf/epoll.csv'; png='build/perf/epoll.png'" perf/epoll/epoll.gp
set terminal pngcairo size 900,540 font ",10" noenhanced
set output png
set datafile separator ","
set key top left
set title "One epoll set (poll-*: one poll array) of N connections, 64 B request/response on a random one: p50"
set xlabel "connections in the set"
set ylabel "round trip p50 (us, log scale)"
set logscale xy
set grid
plot for [m in "kernel scilan-poll scilan-hybrid scilan-intr"] \
	csv using ($1):(strcol(2) eq m ? $3 : 1/0) skip 1 with linespoints title m, \
     for [m in "poll-kernel poll-scilan-poll poll-scilan-hybrid poll-scilan-intr"] \
	csv using ($1):(strcol(2) eq m ? $3 : 1/0) skip 1 with linespoints dashtype 2 title m
