# engine.awk: tools/bench/engine/engine_bench.sh's output -> RESULT lines (format: README.md).
#   rep=R phase=write io=uring nconnect=4 MiBps=812.3 ops_per_s=.. cpu_s_per_GiB=.. ...
#   phase=nfscp_write MiBps=.. cpu_s_per_GiB=.. peak_rss_MiB=..      (the baseline, nfs-cp)
#   rep=R phase=mount_write io=uring nconnect=4 MiBps=..             (nfsshim-fuse over it)
# Of several repetitions the best one counts (MiB/s; ops/s for rand4k), as the script's own
# summary does. Ratios in the same run: engine / nfs-cp per phase, io_uring / epoll.
/^RESULT / { print; next }
function best_metric(ph) { return ph == "rand4k" ? "ops_per_s" : "MiBps" }
/(^| )phase=/ {
  delete kv
  for (i = 1; i <= NF; i++) if (split($i, p, "=") == 2) kv[p[1]] = p[2]
  ph = kv["phase"]
  if (kv["io"] == "uring") kv["io"] = "io_uring"  # engine_bench says io_uring, the mount lines uring
  c = ph
  if ("io" in kv) c = c "/" kv["io"]
  if ("nconnect" in kv) c = c "/nconnect=" kv["nconnect"]
  score = kv[best_metric(ph)] + 0
  if ((c in best) && best[c] >= score) next
  if (!(c in best)) order[++n] = c
  best[c] = score; line[c] = ""
  for (k in kv)
    if (k != "phase" && k != "io" && k != "nconnect" && k != "rep" && kv[k] ~ /^-?[0-9.]+$/)
      line[c] = line[c] sprintf("RESULT bench=engine case=%s metric=%s value=%s\n", c, k, kv[k])
  phase_of[c] = ph; io_of[c] = kv["io"]; nc_of[c] = kv["nconnect"]
}
END {
  for (i = 1; i <= n; i++) printf "%s", line[order[i]]
  for (i = 1; i <= n; i++) {
    c = order[i]; ph = phase_of[c]
    base = ph; sub(/^mount_/, "", base)  # mount_*: nfsshim-fuse over the engine
    if ((base == "write" || base == "read") && ("nfscp_" base in best) && best["nfscp_" base] > 0)
      printf "RESULT bench=engine case=%s metric=ratio_to_nfscp value=%.3f\n", c, best[c] / best["nfscp_" base]
    if (io_of[c] == "io_uring") {
      e = ph "/epoll/nconnect=" nc_of[c]
      if ((e in best) && best[e] > 0)
        printf "RESULT bench=engine case=%s/nconnect=%s metric=ratio_uring_to_epoll value=%.3f\n", ph, nc_of[c], best[c] / best[e]
    }
  }
}
