# awk -f lib.awk -f paired.awk [-v by=io|vers] DATA: paired.sh's table (DATA may be its whole printed output).
# Reads the lines "pair=P first=X load1=L phase=.. vers=3|4.1 io=io_uring|epoll nconnect=N
# MiBps=.. ops_per_s=.. cpu_s_per_GiB=.. syscalls_per_rpc=.. loop_syscalls_per_rpc=.." and
# pairs the two sides of BY (io, the default: io_uring with epoll, rows per vers; vers:
# NFSv4.1 with NFSv3, rows per io) by (pair, row, nconnect, phase). Per row: the medians of
# the per-pair ratios A/B (uring/epoll, v4.1/v3) of speed (MiB/s; ops/s for rand4k) and of
# client CPU per GiB (per op for rand4k: the same ratio), min and max, how many pairs A was
# faster, and a distribution-free confidence interval of the median ratio: the k-th
# smallest and k-th largest of the n sorted ratios, k the largest with coverage
# 1 - 2 P(Binomial(n, 1/2) < k) >= 95% (n = 7: k = 1, [min, max], 98.4%; n < 6 has no such
# k: [min, max] and its lower coverage are shown, with a warning). Verdict, io: "uring
# slower" if the whole interval of the speed ratio is below 1, "uring faster" if all above,
# else "no difference found"; vers (issue 5's goal, v4.1 within 10% of v3): "below 0.9" if
# the whole interval is below 0.9, "within 10%" if none of it is, else "undecided".
BEGIN {
  if (by == "") by = "io"
  if (by == "io") { side = "io"; A = "io_uring"; B = "epoll"; la = "uring"; lb = "epoll"; rowf = "vers"; rowvals = "3 4.1" }
  else if (by == "vers") { side = "vers"; A = "4.1"; B = "3"; la = "v4.1"; lb = "v3"; rowf = "io"; rowvals = "io_uring epoll" }
  else { print "paired.awk: -v by= must be io or vers, got '" by "'" > "/dev/stderr"; bad = 1; exit 1 }
  sa = by == "io" ? "u" : "4.1"; sb = by == "io" ? "e" : "3"; ab = sa "/" sb  # short labels
}
# kv, sort, median: lib.awk (awk -f lib.awk -f paired.awk).
# P(Binomial(n, 1/2) <= j)
function binom_cdf(n, j,   i, c, s) {
  c = 1; s = 0
  for (i = 0; i <= j; i++) { s += c; c = c * (n - i) / (i + 1) }
  return s / 2 ^ n
}
# Coverage of [k-th smallest, k-th largest] of n ratios as an interval of the median.
function coverage(n, k) { return 1 - 2 * binom_cdf(n, k - 1) }
function ci_k(n,   k) {  # the largest k with coverage >= 95%, or 1
  k = 1
  while (2 * (k + 1) <= n + 1 && coverage(n, k + 1) >= 0.95) k++
  return k
}
# The median of the values of one side in a row; "n/a" if any pair lacks it.
function med_of(row, sd, what, n, fmt,   i, a, v) {
  for (i = 1; i <= n; i++) { v = val[row, i, sd, what]; if (v == "" || v == "n/a") return "n/a"; a[i] = v + 0 }
  sort(a, n)
  return sprintf(fmt, median(a, n))
}
function ratios(row, what, n, a,   i) {
  for (i = 1; i <= n; i++) a[i] = val[row, i, A, what] / val[row, i, B, what]
  sort(a, n)
}

/^FAILED / { failures++; print "data: " $0; next }
/^pair=[0-9]+ / && / phase=(write|read|rand4k) / {
  p = kv($0, "pair"); ph = kv($0, "phase"); sd = kv($0, side); rv = kv($0, rowf); nc = kv($0, "nconnect")
  if (sd != A && sd != B) { print "paired.awk: line " NR ": " side "=" sd " is neither " A " nor " B > "/dev/stderr"; bad = 1; exit 1 }
  key = rv SUBSEP nc SUBSEP ph
  if ((key, p, sd) in seen) {
    print "paired.awk: line " NR ": a second " side "=" sd " line for pair " p " " rowf "=" rv " nconnect=" nc " " ph " (two runs in one file?)" > "/dev/stderr"
    bad = 1; exit 1
  }
  seen[key, p, sd] = 1
  if (!(key in rowseen)) { rowseen[key] = 1; rows[++nrows] = key }
  if (!((key, p) in pairseen)) { pairseen[key, p] = 1; np[key]++; pairno[key, np[key]] = p }
  line[key, p, sd] = 1
  raw[key, p, sd, "speed"] = (ph == "rand4k") ? kv($0, "ops_per_s") : kv($0, "MiBps")
  raw[key, p, sd, "cpu"] = kv($0, "cpu_s_per_GiB")
  raw[key, p, sd, "sys"] = kv($0, "syscalls_per_rpc")
  raw[key, p, sd, "loop"] = kv($0, "loop_syscalls_per_rpc")
}
END {
  if (bad) exit 1
  if (nrows == 0) { print "paired.awk: no 'pair=N ... phase=...' lines in the input" > "/dev/stderr"; exit 1 }
  # Rows in a fixed order: vers (io mode) or io (vers mode), nconnect, phase.
  split(rowvals, vs, " "); split("1 2 4 8", ncs, " "); split("write read rand4k", phs, " ")
  for (a = 1; a <= 2; a++) for (b = 1; b <= 4; b++) for (c = 1; c <= 3; c++) {
    key = vs[a] SUBSEP ncs[b] SUBSEP phs[c]
    if (key in rowseen) order[++nord] = key
  }
  if (nord != nrows) { print "paired.awk: rows other than " rowf " " rowvals ", nconnect 1/2/4/8, write/read/rand4k in the input" > "/dev/stderr"; exit 1 }
  # Complete pairs only (both lines present), renumbered 1..n per row.
  for (r = 1; r <= nord; r++) {
    key = order[r]; n = 0
    for (i = 1; i <= np[key]; i++) {
      p = pairno[key, i]
      if (!((key, p, A) in line) || !((key, p, B) in line)) { incomplete++; continue }
      if (raw[key, p, A, "speed"] + 0 <= 0 || raw[key, p, B, "speed"] + 0 <= 0 || raw[key, p, B, "cpu"] + 0 <= 0) {
        print "paired.awk: pair " p " of " key " has a zero speed or CPU: dropped" > "/dev/stderr"; incomplete++; continue
      }
      n++
      for (w = 1; w <= 4; w++) {
        what = w == 1 ? "speed" : w == 2 ? "cpu" : w == 3 ? "sys" : "loop"
        val[key, n, A, what] = raw[key, p, A, what]
        val[key, n, B, what] = raw[key, p, B, what]
      }
    }
    npairs[key] = n
    if (n > 0) ns[n] = 1
  }
  for (n in ns) {
    k = ci_k(n + 0)
    printf "[CI]: interval of the median ratio, %d pairs: sorted ratios #%d to #%d, exact coverage %.1f%% (distribution-free)\n", n, k, n + 1 - k, 100 * coverage(n + 0, k)
    if (coverage(n + 0, k) < 0.95) printf "WARNING: %d pairs cannot give a distribution-free 95%% interval (6 is the fewest): verdicts marked * are at %.1f%%\n", n, 100 * coverage(n + 0, k)
  }
  w = by == "io" ? 4 : 8  # the row column: vers (io mode) or io (vers mode)
  printf "%-" w "s %2s %-6s %2s %8s %8s | %-18s %9s %5s | %-18s | %-11s | %-11s | %s\n", rowf, "nc", "phase", "n", la, lb,
         "speed " ab " [CI]", "min-max", "fast", "CPU " ab " [CI]", "loop/rpc " sa " " sb, "sys/rpc " sa " " sb, "verdict"
  for (r = 1; r <= nord; r++) {
    key = order[r]; n = npairs[key]; split(key, kp, SUBSEP)
    name = kp[1] "/nc" kp[2] "/" kp[3]
    if (n == 0) { printf "%-" w "s %2s %-6s  0 no complete pair\n", kp[1], kp[2], kp[3]; continue }
    k = ci_k(n)
    ratios(key, "speed", n, s)
    ratios(key, "cpu", n, cp)
    faster = 0
    for (i = 1; i <= n; i++) if (val[key, i, A, "speed"] / val[key, i, B, "speed"] > 1) faster++
    lo = s[k]; hi = s[n + 1 - k]
    if (by == "io") verdict = hi < 1 ? "uring slower" : lo > 1 ? "uring faster" : "no difference found"
    else verdict = hi < 0.9 ? "below 0.9" : lo >= 0.9 ? "within 10%" : "undecided"
    if (coverage(n, k) < 0.95) weak++
    lu = med_of(key, A, "loop", n, "%.2f"); le = med_of(key, B, "loop", n, "%.2f")
    su = med_of(key, A, "sys", n, "%.2f"); se = med_of(key, B, "sys", n, "%.2f")
    printf "%-" w "s %2s %-6s %2d %8s %8s | %4.2f [%4.2f, %4.2f] %4.2f-%4.2f %2d/%-2d | %4.2f [%4.2f, %4.2f] | %5s %5s | %5s %5s | %s\n",
           kp[1], kp[2], kp[3], n, med_of(key, A, "speed", n, "%.1f"), med_of(key, B, "speed", n, "%.1f"),
           median(s, n), lo, hi, s[1], s[n], faster, n, median(cp, n), cp[k], cp[n + 1 - k], lu, le, su, se, verdict (coverage(n, k) < 0.95 ? " *" : "")
    rows_done++
    if (verdict == "uring slower" || verdict == "below 0.9") { slower++; slower_rows = slower_rows " " name }
    else if (verdict == "uring faster" || verdict == "within 10%") { quicker++; if (hi < 1) under1 = under1 " " name }
    else undecided_rows = undecided_rows " " name
    if (cp[k] > 1) { morecpu++; morecpu_rows = morecpu_rows " " name }
    if (lu != "n/a" && le != "n/a") { lrows++; if (lu + 0 < le + 0) lfewer++; else lnot = lnot " " name }
    if (su != "n/a" && se != "n/a") { srows++; if (su + 0 < se + 0) sfewer++; else snot = snot " " name }
  }
  print "(speed: MiB/s, ops/s for rand4k, medians; ratios are per pair, then their median; [..] is the interval above;"
  print " fast: pairs with " la " faster; loop/rpc: the event loop's own syscalls per RPC, sys/rpc: the whole process's, medians)"
  printf "summary: %s had fewer loop syscalls per RPC in %d of %d rows%s\n", la, lfewer, lrows, lnot == "" ? "" : " (not in:" lnot ")"
  printf "summary: %s had fewer whole-process syscalls per RPC in %d of %d rows%s\n", la, sfewer, srows, srows == 0 ? " (perf counter n/a)" : snot == "" ? "" : " (not in:" snot ")"
  if (by == "io")
    printf "summary: uring slower in %d of %d rows%s; uring faster in %d; no difference found in %d\n", slower, rows_done,
           slower ? " (" substr(slower_rows, 2) ")" : "", quicker, rows_done - slower - quicker
  else {
    printf "summary: v4.1 within 10%% of v3 (whole interval at or above 0.9) in %d of %d rows; below 0.9 in %d%s; undecided in %d%s\n",
           quicker, rows_done, slower, slower ? " (" substr(slower_rows, 2) ")" : "", rows_done - slower - quicker,
           undecided_rows == "" ? "" : " (" substr(undecided_rows, 2) ")"
    if (under1 != "") printf "summary: within 10%% but slower than v3 (whole interval below 1):%s\n", under1
  }
  printf "summary: %s used more CPU per GiB/op (whole interval above 1) in %d of %d rows%s\n", la, morecpu, rows_done, morecpu ? " (" substr(morecpu_rows, 2) ")" : ""
  if (weak) printf "summary: %d of %d rows have too few pairs for a 95%% interval (*): their verdicts show nothing\n", weak, rows_done
  if (failures || incomplete) printf "summary: %d failed runs, %d incomplete pairs left out\n", failures, incomplete
}
