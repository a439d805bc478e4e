#!/bin/bash
# plot.sh RESULTS OUTDIR: the report's PNG plots from RESULT lines (gnuplot).
#   preload_overhead.png  time per call with the preload / without, per call and configuration
#   engine_nconnect.png   engine throughput (MiB/s) against nconnect, per phase and io backend
#                         (NFSv3 engine, sequential phases; rand4k is in ops/s in the tables)
#   engine_v41_v3.png     the NFSv4.1 engine beside the NFSv3 engine against nconnect: write,
#                         read (MiB/s) and rand4k (ops/s), one line per version and io backend
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
awk '$2 == "bench=engine" && $4 == "metric=MiBps" && $3 !~ /^case=(rand4k|v4\.1)/ {
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
set title 'Direct NFSv3 engine: throughput against nconnect'
set xlabel 'nconnect'
set ylabel 'MiB/s'
set logscale x 2
set grid
set key outside right
plot $(IFS=,; echo "${plots[*]}")
GP
  echo engine_nconnect.png
fi

# v4.1 beside v3: per phase, points (nconnect, value) for each version/io series.
awk '$2 == "bench=engine" && $3 ~ /^case=(v4\.1\/)?(write|read|rand4k)\// {
       c = substr($3, 6); n = split(c, p, "/"); v = "v3"; i = 1
       if (p[1] == "v4.1") { v = "v4.1"; i = 2 }
       if (n != i + 2) next
       want = p[i] == "rand4k" ? "metric=ops_per_s" : "metric=MiBps"
       if ($4 != want) next
       nc = p[n]; sub(/^nconnect=/, "", nc)
       print p[i], v "/" p[i + 1], nc, substr($5, 7) }' "$results" | sort -k1,1 -k2,2 -k3,3n > "$tmp/v41.dat"
if grep -q ' v4\.1/' "$tmp/v41.dat" && [ "$(cut -d' ' -f3 "$tmp/v41.dat" | sort -u | wc -l)" -ge 2 ]; then
  panels=""
  for ph in write read rand4k; do
    plots=()
    for s in $(awk -v p="$ph" '$1 == p {print $2}' "$tmp/v41.dat" | sort -u); do
      f="$tmp/v_${ph}_${s//[\/.]/_}.dat"
      awk -v p="$ph" -v s="$s" '$1 == p && $2 == s {print $3, $4}' "$tmp/v41.dat" > "$f"
      case $s in v3/*) dt=1 ;; *) dt=2 ;; esac  # v3 solid, v4.1 dashed
      case $s in */io_uring) lc=1 ;; *) lc=2 ;; esac
      plots+=("'$f' using 1:2 with linespoints dt $dt lc $lc lw 2 title '$s'")
    done
    [ ${#plots[@]} -gt 0 ] || continue
    unit='MiB/s'; [ "$ph" = rand4k ] && unit='ops/s (4 KiB)'
    panels+="set title '$ph'; set ylabel '$unit'; plot $(IFS=,; echo "${plots[*]}")"$'\n'
  done
  gnuplot <<GP
${term/960,540/1440,480}
set output '$out/engine_v41_v3.png'
set multiplot layout 1,3 title 'NFSv4.1 engine (dashed) beside NFSv3 engine (solid), same ganesha, same run'
set xlabel 'nconnect'
set logscale x 2
set xrange [0.8:10]
set yrange [0:*]
set grid
set key bottom right
$panels
unset multiplot
GP
  echo engine_v41_v3.png
fi
