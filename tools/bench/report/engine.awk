# engine.awk: tools/bench/engine/engine_bench.sh's output -> RESULT lines (format: README.md).
#   rep=R phase=write vers=3 io=uring nconnect=4 MiBps=812.3 ops_per_s=.. cpu_s_per_GiB=.. ...
#   rep=R phase=write vers=4.1 ... peak_slots=16 slots_granted=64 ...   (the NFSv4.1 engine)
#   phase=nfscp_write MiBps=.. cpu_s_per_GiB=.. peak_rss_MiB=..      (the baseline, nfs-cp)
#   rep=R phase=mount_write vers=3 io=uring nconnect=4 MiBps=..      (nfsshim-fuse over it)
# Of several repetitions the best one counts (MiB/s; ops/s for rand4k), as the script's own
# summary does. Ratios in the same run: engine / nfs-cp per phase, io_uring / epoll, and
# v4.1 / v3 per phase, io and nconnect. v3 cases are PHASE/IO/nconnect=N (as before v4.1
# was measured), v4.1 cases v4.1/PHASE/IO/nconnect=N.
/^RESULT / { print; next }
function best_metric(ph) { return ph == "rand4k" ? "ops_per_s" : "MiBps" }
/(^| )phase=/ {
  delete kv
  for (i = 1; i <= NF; i++) if (split($i, p, "=") == 2) kv[p[1]] = p[2]
  ph = kv["phase"]
  # ("k" in kv) first: reading kv["k"] would create the key (nfs-cp lines have no io).
  if (("io" in kv) && kv["io"] == "uring") kv["io"] = "io_uring"  # the mount lines say uring
  v41 = ("vers" in kv) && kv["vers"] == "4.1"
  c = (v41 ? "v4.1/" : "") ph
  if ("io" in kv) c = c "/" kv["io"]
  if ("nconnect" in kv) c = c "/nconnect=" kv["nconnect"]
  score = kv[best_metric(ph)] + 0
  if ((c in best) && best[c] >= score) next
  if (!(c in best)) order[++n] = c
  best[c] = score; line[c] = ""
  for (k in kv)
    if (k != "phase" && k != "vers" && k != "io" && k != "nconnect" && k != "rep" && k != "calls_per_conn" && kv[k] ~ /^-?[0-9.]+$/)
      line[c] = line[c] sprintf("RESULT bench=engine case=%s metric=%s value=%s\n", c, k, kv[k])
  phase_of[c] = ph; io_of[c] = kv["io"]; nc_of[c] = kv["nconnect"]; pre_of[c] = v41 ? "v4.1/" : ""
}
END {
  for (i = 1; i <= n; i++) printf "%s", line[order[i]]
  for (i = 1; i <= n; i++) {
    c = order[i]; ph = phase_of[c]
    base = ph; sub(/^mount_/, "", base)  # mount_*: nfsshim-fuse over the engine
    if ((base == "write" || base == "read") && ("nfscp_" base in best) && best["nfscp_" base] > 0)
      printf "RESULT bench=engine case=%s metric=ratio_to_nfscp value=%.3f\n", c, best[c] / best["nfscp_" base]
    if (io_of[c] == "io_uring") {
      e = pre_of[c] ph "/epoll/nconnect=" nc_of[c]
      if ((e in best) && best[e] > 0)
        printf "RESULT bench=engine case=%s%s/nconnect=%s metric=ratio_uring_to_epoll value=%.3f\n", pre_of[c], ph, nc_of[c], best[c] / best[e]
    }
    if (pre_of[c] == "v4.1/") {
      v3 = substr(c, 6)
      if ((v3 in best) && best[v3] > 0)
        printf "RESULT bench=engine case=%s metric=ratio_v41_to_v3 value=%.3f\n", c, best[c] / best[v3]
    }
  }
}
