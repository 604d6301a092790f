# perf/apps/servers.gp — the bench-apps plot: scilan/kernel TCP per row of
# apps.csv (log scale), throughput rows (higher is better), CPU and p99 rows (lower is better).
#   gnuplot -e "dat='build/perf/apps/apps.plot.dat'; png='build/perf/apps/apps.png'; sub='...'" perf/apps/servers.gp
# dat: one line per row measured on both transports: index "program" ratio higher(1/0)
set terminal pngcairo size 1600,650 font ",10" noenhanced
set output png
set title "Server programs: scilan / kernel TCP, same run\n".sub
set ylabel "scilan / kernel TCP (log scale)"
set logscale y
set grid ytics
set key top left
set style fill solid 0.8 border -1
set boxwidth 0.7
set xtics rotate by 30 right scale 0
set bmargin 11
set lmargin 24
set xrange [-0.7:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb "#444444"
plot dat using 1:($4 == 1 ? $3 : 1/0):xtic(2) with boxes lc rgb "#3b7dd8" title "throughput (above 1: scilan faster)", \
     dat using 1:($4 == 0 ? $3 : 1/0):xtic(2) with boxes lc rgb "#e08a2c" title "CPU per request, p99 latency (above 1: scilan costs more)", \
     dat using 1:3:(sprintf("%.2fx", $3)) with labels offset 0,0.8 notitle
