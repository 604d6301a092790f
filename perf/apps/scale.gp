# perf/apps/scale.gp — the bench-scale plot: per row of scale.csv, scilan's
# rate over kernel TCP's (log scale), with issue 10's target.
#   gnuplot -e "csv='build/perf/scale.csv'; png='build/perf/scale.png'" perf/apps/scale.gp
set terminal pngcairo size 900,520 font ",10" noenhanced
set output png
set datafile separator ","
set key top right
set title "Many connections: scilan vs kernel TCP, server CPU 0, client CPU 1"
set ylabel "scilan / kernel TCP (x, log scale)"
set logscale y
set yrange [0.1:*]
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.8
set xtics rotate by -20 scale 0
# Columns: metric,unit,kernel,scilan,gain,target,met
plot csv using 5:xtic(1) skip 1 title "gain (scilan/kernel req/s)" lc rgb "#3b7dd8", \
     csv using ($0):6 skip 1 with points pt 7 ps 1.6 lc rgb "#d83b3b" title "target", \
     csv using ($0):5:(sprintf("%.3gx", $5)) skip 1 with labels offset 0,0.8 notitle
