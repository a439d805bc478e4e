# v41_table.awk RESULTS: the report's "NFSv4.1 against NFSv3" Markdown table from the
# engine's RESULT lines (engine.awk: v3 cases PHASE/IO/nconnect=N, v4.1 cases
# v4.1/PHASE/IO/nconnect=N), and the issue's goals checked on it. Prints nothing without
# v4.1 figures.
$2 == "bench=engine" {
  c = substr($3, 6); m = substr($4, 8); v = substr($5, 7)
  vers = "v3"
  if (c ~ /^v4\.1\//) { vers = "v4.1"; c = substr(c, 6) }
  if (split(c, p, "/") != 3 || p[1] !~ /^(write|read|rand4k)$/) next
  val[vers, c, m] = v
  if (vers == "v4.1") has41 = 1
}
END {
  if (!has41) exit
  print "| phase | io | nconnect | v3 | v4.1 | v4.1 / v3 | v4.1 / nfs-cp | v4.1 CPU s/GiB (v3) | v4.1 peak slots / granted | v4.1 compounds |"
  print "|---|---|---|---|---|---|---|---|---|---|"
  split("write read rand4k", ph, " "); split("io_uring epoll", ios, " ")
  for (i = 1; i <= 3; i++) for (j = 1; j <= 2; j++) for (n = 1; n <= 8; n *= 2) {
    c = ph[i] "/" ios[j] "/nconnect=" n
    m = ph[i] == "rand4k" ? "ops_per_s" : "MiBps"
    unit = ph[i] == "rand4k" ? " op/s" : " MiB/s"
    if (!(("v4.1", c, m) in val)) continue
    v3 = val["v3", c, m]; v41 = val["v4.1", c, m]
    r = (v3 + 0 > 0) ? sprintf("%.2f", v41 / v3) : "-"
    cp = (("v4.1", c, "ratio_to_nfscp") in val) ? sprintf("%.2f", val["v4.1", c, "ratio_to_nfscp"]) : "-"
    cpu = ph[i] == "rand4k" ? val["v4.1", c, "cpu_us_per_op"] " us/op (" val["v3", c, "cpu_us_per_op"] ")" : val["v4.1", c, "cpu_s_per_GiB"] " (" val["v3", c, "cpu_s_per_GiB"] ")"
    printf "| %s | %s | %d | %.0f%s | %.0f%s | %s | %s | %s | %s / %s | %s |\n", ph[i], ios[j], n, v3, unit, v41, unit, r, cp, cpu,
           val["v4.1", c, "peak_slots"], val["v4.1", c, "slots_granted"], val["v4.1", c, "rpcs"]
    if (r != "-") {
      nr++; if (v41 / v3 >= 0.9) ok++; if (worst == "" || v41 / v3 < worst) { worst = v41 / v3; wc = c }
      ls[i] += log(v41 / v3); ns[i]++
      cm = ph[i] == "rand4k" ? "cpu_us_per_op" : "cpu_s_per_GiB"
      if (val["v4.1", c, cm] + 0 > 0 && val["v3", c, cm] + 0 > 0) { lc[i] += log(val["v4.1", c, cm] / val["v3", c, cm]); nc[i]++ }
    }
    if (ph[i] == "write" && cp != "-") { nw++; if (cp + 0 >= 2) w2++ }
    if (val["v4.1", c, "peak_slots"] + 0 > peak) peak = val["v4.1", c, "peak_slots"] + 0
    granted = val["v4.1", c, "slots_granted"]
  }
  print ""
  for (i = 1; i <= 3; i++) if (ns[i])
    printf "- %s, geometric mean over %d lines: v4.1 / v3 speed x%.2f, client CPU per %s x%.2f.\n", ph[i], ns[i], exp(ls[i] / ns[i]), (ph[i] == "rand4k" ? "op" : "GiB"), (nc[i] ? exp(lc[i] / nc[i]) : 0)
  printf "- Goal \"v4.1 within 10%% of v3\": met in %d of %d lines (worst x%.2f, %s).\n", ok, nr, worst, wc
  printf "- Goal \"v4.1 writes at least 2x nfs-cp\": met in %d of %d lines.\n", w2, nw
  printf "- Slots: at most %d of the %s granted were in use at once (peak since the engine was opened, so a read line includes its run's write phase).\n", peak, granted
}
