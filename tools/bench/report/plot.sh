#!/bin/bash
# plot.sh RESULTS OUTDIR: the report's PNG plots from RESULT lines (gnuplot).
#   preload_overhead.png  time per call with the preload / without, per call and configuration
#   engine_nconnect.png   engine throughput (MiB/s) against nconnect, per phase and io backend
#                         (sequential phases; rand4k is in ops/s in the report's tables)
# Prints the names of the plots it made.
set -euo pipefail
results=$1 out=$2
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot missing (apt-get install gnuplot-nox)" >&2; exit 0; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
term="set terminal pngcairo size 960,540 font 'sans,10' noenhanced"
gnuplot -e "set terminal" 2>&1 | grep -q pngcairo || term="set terminal png size 960,540 noenhanced"

# Preload: rows = calls, columns = configurations, cells = ratio to plain.
awk '$2 == "bench=preload" && $4 == "metric=ratio_to_plain" && $3 !~ /case=jvm/ {
       c = substr($3, 6); split(c, p, "/"); v = substr($5, 7)
       if (!(p[1] in seen_op)) { seen_op[p[1]] = 1; ops[++nops] = p[1] }
       if (!(p[2] in seen_cfg)) { seen_cfg[p[2]] = 1; cfgs[++ncfg] = p[2] }
       r[p[1], p[2]] = v }
     END { if (!nops) exit
           printf "call"; for (j = 1; j <= ncfg; j++) printf " %s", cfgs[j]; print ""
           for (i = 1; i <= nops; i++) { printf "%s", ops[i]
             for (j = 1; j <= ncfg; j++) printf " %s", ((ops[i], cfgs[j]) in r) ? r[ops[i], cfgs[j]] : "NaN"
             print "" } }' "$results" > "$tmp/preload.dat"
if [ -s "$tmp/preload.dat" ]; then
  n=$(head -1 "$tmp/preload.dat" | wc -w)
  gnuplot <<GP
$term
set output '$out/preload_overhead.png'
set title 'Preload: time per call with the shim / time without (1 = no cost; same run)'
set ylabel 'ratio to plain (log scale)'
set logscale y
set yrange [0.1:*]
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set yrange [0:*]
set grid ytics
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
plot for [i=2:$n] '$tmp/preload.dat' using i:xtic(1) title columnheader(i)
GP
  echo preload_overhead.png
fi

# Engine: one series per phase/io, points (nconnect, MiBps).
awk '$2 == "bench=engine" && $4 == "metric=MiBps" && $3 !~ /^case=rand4k/ {
       c = substr($3, 6); n = split(c, p, "/"); nc = p[n]; sub(/^nconnect=/, "", nc)
       if (nc !~ /^[0-9]+$/) next
       s = ""; for (i = 1; i < n; i++) s = s (i > 1 ? "/" : "") p[i]
       print s, nc, substr($5, 7) }' "$results" | sort -k1,1 -k2,2n > "$tmp/engine.dat"
if [ "$(cut -d' ' -f2 "$tmp/engine.dat" | sort -u | wc -l)" -ge 2 ]; then
  series=$(cut -d' ' -f1 "$tmp/engine.dat" | sort -u)
  plots=()
  for s in $series; do
    awk -v s="$s" '$1 == s {print $2, $3}' "$tmp/engine.dat" > "$tmp/e_${s//\//_}.dat"
    plots+=("'$tmp/e_${s//\//_}.dat' using 1:2 with linespoints title '$s'")
  done
  gnuplot <<GP
$term
set output '$out/engine_nconnect.png'
set title 'Direct NFS engine: throughput against nconnect'
set xlabel 'nconnect'
set ylabel 'MiB/s'
set logscale x 2
set grid
set key outside right
plot $(IFS=,; echo "${plots[*]}")
GP
  echo engine_nconnect.png
fi
