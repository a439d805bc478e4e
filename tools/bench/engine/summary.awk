# summary.awk RESULTS: engine_bench.sh's summary. Of the repetitions the best counts
# (MiB/s; ops/s for rand4k). Ratios: engine / nfs-cp (same server, same run), v4.1 / v3
# (same phase, io and nconnect), io_uring / epoll. The v4.1 goals are checked at the end.
# srvCPU: the server's (ganesha's) CPU per GiB in the same phase. Client and server share
# this machine's NCPU CPUs (awk -v ncpu=N), so NCPU / (client + server CPU per GiB) bounds
# the speed: the "ceiling" lines.
# kv: lib.awk (awk -f lib.awk -f summary.awk).
/phase=nfscp_write/ { v = kv($0, "MiBps") + 0; if (v > cpw) { cpw = v; cpwc = kv($0, "cpu_s_per_GiB"); cpwr = kv($0, "peak_rss_MiB"); cpws = kv($0, "server_cpu_s_per_GiB") } }
/phase=nfscp_read/  { v = kv($0, "MiBps") + 0; if (v > cpr) { cpr = v; cprc = kv($0, "cpu_s_per_GiB"); cprr = kv($0, "peak_rss_MiB"); cprs = kv($0, "server_cpu_s_per_GiB") } }
/phase=mount_/ { vers = kv($0, "vers"); if (vers == "") vers = "3"
  k = kv($0, "phase") " v" vers " " kv($0, "io") " nconnect=" kv($0, "nconnect"); v = kv($0, "MiBps") + 0
  if (v > mount[k]) {
    mount[k] = v; mnc[k] = kv($0, "nconnect") + 0; mdc[k] = kv($0, "daemon_cpu_s_per_GiB"); mac[k] = kv($0, "app_cpu_s_per_GiB")
    msc[k] = kv($0, "server_cpu_s_per_GiB"); mrss[k] = kv($0, "daemon_peak_rss_MiB")
  }
}
/phase=(write|read|rand4k) / {
  vers = kv($0, "vers"); if (vers == "") vers = "3"
  k = kv($0, "phase") " " vers " " kv($0, "io") " " kv($0, "nconnect")
  v = (kv($0, "phase") == "rand4k") ? kv($0, "ops_per_s") + 0 : kv($0, "MiBps") + 0
  if (v > best[k]) {
    best[k] = v; cpu[k] = kv($0, "cpu_s_per_GiB"); sc[k] = kv($0, "syscalls_per_rpc"); lsc[k] = kv($0, "loop_syscalls_per_rpc")
    rss[k] = kv($0, "peak_rss_MiB"); cus[k] = kv($0, "cpu_us_per_op"); pc[k] = kv($0, "calls_per_conn")
    slots[k] = kv($0, "peak_slots"); granted[k] = kv($0, "slots_granted"); rpcs[k] = kv($0, "rpcs")
    srv[k] = (kv($0, "phase") == "rand4k") ? kv($0, "server_cpu_us_per_op") : kv($0, "server_cpu_s_per_GiB")
  }
}
END {
  # Client CPU through the mount: the daemon's plus dd's (the kernel's FUSE and page cache
  # copies are in these two). Its ceiling like the engines': NCPU / (client + server).
  for (k in mount) {
    k3 = k; sub(/ v4\.1 /, " v3 ", k3); wr = (k ~ /write/)
    printf "through the mount: %-30s %6.0f MiB/s  x%.2f nfs-cp%s", k, mount[k], mount[k] / (wr ? cpw : cpr),
           (k != k3 && (k3 in mount) && mount[k3] > 0) ? sprintf("  x%.2f v3", mount[k] / mount[k3]) : ""
    if (mdc[k] == "") { printf "\n"; continue }
    printf "  CPU s/GiB: daemon %.3f + dd %.3f, server %.3f; daemon peak RSS %d MiB\n", mdc[k], mac[k], msc[k], mrss[k]
    kc = k; sub(/ (uring|epoll) nconnect=.*/, "", kc); both = mdc[k] + mac[k] + msc[k]
    if (both > 0 && (!(kc in mleast) || both < mleast[kc])) { mleast[kc] = both; mleastk[kc] = k }
    if (mnc[k] >= 4) { mgoal[wr]++; if (mount[k] / (wr ? cpw : cpr) >= (wr ? 2 : 1.5)) mgoalok[wr]++ }
  }
  if (ncpu > 0) for (kc in mleast) {
    k = mleastk[kc]; base = (kc ~ /write/) ? cpw : cpr
    printf "ceiling %s: daemon %.3f + dd %.3f + server %.3f CPU s/GiB (%s, the least) on %d CPUs: at most %.0f MiB/s = x%.2f nfs-cp\n", kc, mdc[k], mac[k], msc[k], k, ncpu, ncpu * 1024 / mleast[kc], (base > 0 ? ncpu * 1024 / mleast[kc] / base : 0)
  }
  if (mgoal[0]) printf "goal mount reads >= 1.5x nfs-cp with nconnect >= 4: %d of %d lines\n", mgoalok[0], mgoal[0]
  if (mgoal[1]) printf "goal mount writes >= 2x nfs-cp with nconnect >= 4: %d of %d lines\n", mgoalok[1], mgoal[1]
  printf "nfs-cp: write %.0f MiB/s (%s CPU s/GiB, server %s, %s MiB RSS), read %.0f MiB/s (%s CPU s/GiB, server %s, %s MiB RSS)\n", cpw, cpwc, cpws, cpwr, cpr, cprc, cprs, cprr
  printf "%-7s %-4s %-8s %3s %10s %8s %6s %9s %7s %8s %8s %7s %5s %7s  %s\n", "phase", "vers", "io", "nc", "MiB/s|op/s", "x nfscp", "x v3", "CPUs/GiB", "srvCPU", "sys/rpc", "loop/rpc", "RSS MiB", "slots", "rpcs", "rpcs per connection"
  split("write read rand4k", ph, " "); split("io_uring epoll", ios, " "); split("3 4.1", vs, " ")
  for (p = 1; p <= 3; p++) for (n = 1; n <= 8; n *= 2) for (i = 1; i <= 2; i++) for (w = 1; w <= 2; w++) {
    k = ph[p] " " vs[w] " " ios[i] " " n
    if (!(k in best)) continue
    base = ph[p] == "write" ? cpw : ph[p] == "read" ? cpr : 0
    ratio = base > 0 ? sprintf("%.2f", best[k] / base) : "-"
    k3 = ph[p] " 3 " ios[i] " " n
    rv3 = (vs[w] == "4.1" && (k3 in best) && best[k3] > 0) ? sprintf("%.2f", best[k] / best[k3]) : "-"
    printf "%-7s %-4s %-8s %3d %10.0f %8s %6s %9s %7s %8s %8s %7s %5s %7s  %s\n", ph[p], vs[w], ios[i], n, best[k], ratio, rv3,
           (ph[p] == "rand4k" ? cus[k] "us/op" : cpu[k]), (srv[k] == "" ? "-" : srv[k]), sc[k], lsc[k], rss[k], (slots[k] == "" ? "-" : slots[k]), rpcs[k], pc[k]
    # The least client + server CPU per GiB of any line of this phase and engine: its ceiling.
    if (ph[p] != "rand4k" && srv[k] != "") {
      both = cpu[k] + srv[k]; kc = ph[p] " " vs[w]
      if (!(kc in least) || both < least[kc]) { least[kc] = both; leastc[kc] = cpu[k]; leasts[kc] = srv[k] }
    }
    if (ph[p] == "write" && n >= 4 && cpw > 0) { nw4[vs[w]]++; if (best[k] / cpw >= 2) nw4ok[vs[w]]++ }
    if (vs[w] == "4.1" && rv3 != "-") {
      r = best[k] / best[k3]; nv++
      # Per phase: geometric means of v4.1/v3 speed and CPU (CPU moves less with the load).
      lsp[p] += log(r); nsp[p]++
      c4 = (ph[p] == "rand4k" ? cus[k] : cpu[k]) + 0; c3 = (ph[p] == "rand4k" ? cus[k3] : cpu[k3]) + 0
      if (c4 > 0 && c3 > 0) { lcp[p] += log(c4 / c3); ncp[p]++ }
      if (r >= 0.9) nok++; else bad = bad sprintf(" %s/%s/nc=%d x%.2f", ph[p], ios[i], n, r)
      if (worst == "" || r < worst) { worst = r; worstk = ph[p] "/" ios[i] "/nc=" n }
      if (slots[k] + 0 > peak) peak = slots[k] + 0
      if (granted[k] != "") g = granted[k]
    }
    if (vs[w] == "4.1" && ph[p] == "write" && cpw > 0) { nw++; if (best[k] / cpw >= 2) nw2++ }
  }
  for (w = 1; w <= 2; w++) for (p = 1; p <= 3; p++) for (n = 1; n <= 8; n *= 2) {
    ku = ph[p] " " vs[w] " io_uring " n; ke = ph[p] " " vs[w] " epoll " n
    if ((ku in best) && (ke in best))
      printf "uring/epoll v%-3s %-6s nconnect=%d: speed x%.2f, syscalls/rpc %s vs %s, loop syscalls/rpc %s vs %s\n", vs[w], ph[p], n, best[ku] / best[ke], sc[ku], sc[ke], lsc[ku], lsc[ke]
  }
  if (ncpu > 0) for (p = 1; p <= 2; p++) for (w = 1; w <= 2; w++) {
    kc = ph[p] " " vs[w]
    if (!(kc in least) || least[kc] <= 0) continue
    base = p == 1 ? cpw : cpr
    printf "ceiling %-5s v%-3s: client %.3f + server %.3f CPU s/GiB (the least of its lines) on %d CPUs: at most %.0f MiB/s = x%.2f nfs-cp\n", ph[p], vs[w], leastc[kc], leasts[kc], ncpu, ncpu * 1024 / least[kc], (base > 0 ? ncpu * 1024 / least[kc] / base : 0)
  }
  for (w = 1; w <= 2; w++) if (nw4[vs[w]])
    printf "goal v%s writes >= 2x nfs-cp with nconnect >= 4: %d of %d lines\n", vs[w], nw4ok[vs[w]], nw4[vs[w]]
  for (p = 1; p <= 3; p++) if (nsp[p])
    printf "v4.1/v3 %-6s over %d lines (geometric mean): speed x%.2f, client CPU per %s x%.2f\n", ph[p], nsp[p], exp(lsp[p] / nsp[p]), (ph[p] == "rand4k" ? "op" : "GiB"), (ncp[p] ? exp(lcp[p] / ncp[p]) : 0)
  if (nv) {
    printf "goal v4.1 within 10%% of v3: %d of %d lines (worst x%.2f, %s)%s\n", nok, nv, worst, worstk, (bad == "" ? "" : "; below 0.9:" bad)
    printf "goal v4.1 writes >= 2x nfs-cp: %d of %d lines\n", nw2, nw
    printf "v4.1 slots: peak in use %d of %s granted (most in one run since the engine was opened)\n", peak, g
  }
}
