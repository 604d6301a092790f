# perf/apps/apps.gp — the bench-apps-pairs plot: per row of apps.csv, how many times
# better scilan is than kernel TCP (log scale), with the target where there is one.
#   gnuplot -e "csv='build/perf/apps.csv'; png='build/perf/apps.png'" perf/apps/apps.gp
set terminal pngcairo size 1000,560 font ",10" noenhanced
set output png
set datafile separator ","
set key top right
set title "Unmodified programs: scilan (polling) vs kernel TCP, server CPU 0, client CPU 1"
set ylabel "gain over kernel TCP (x, log scale)"
set logscale y
set yrange [0.5:*]
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.8
set xtics rotate by -25 scale 0
# Columns: metric,unit,better,kernel,scilan,ratio,gain,target,met
plot csv using 7:xtic(1) skip 1 title "gain (kernel/scilan latency, scilan/kernel rate)" lc rgb "#3b7dd8", \
     csv using ($0):($8 > 0 ? $8 : 1/0) skip 1 with points pt 7 ps 1.6 lc rgb "#d83b3b" title "target", \
     csv using ($0):7:(sprintf("%.3gx", $7)) skip 1 with labels offset 0,0.8 notitle
