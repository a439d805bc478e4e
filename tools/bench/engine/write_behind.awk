# write_behind.awk RUNS: write_behind.sh's table (awk -f lib.awk -f write_behind.awk RUNS).
# Per row (vers, write size): the median MiB/s of each side, the median of the per-pair
# ratios on/off with their min and max, the medians of the daemon's CPU per GiB.
/^pair=[0-9]/ {
  row = "vers=" kv($0, "vers") " bs=" kv($0, "bs"); side = kv($0, "write_behind_kb") + 0 ? "on" : "off"
  speed[row, kv($0, "pair"), side] = kv($0, "MiBps"); cpu[row, kv($0, "pair"), side] = kv($0, "daemon_cpu_s_per_GiB")
  if (!(row in seen)) { seen[row] = 1; rows[++nr] = row }
  if (kv($0, "pair") + 0 > np) np = kv($0, "pair") + 0
}
END {
  printf "%-18s %10s %10s %8s %14s %12s %12s\n", "row", "on MiB/s", "off MiB/s", "on/off", "range", "on cpu/GiB", "off cpu/GiB"
  for (r = 1; r <= nr; r++) {
    row = rows[r]
    for (p = 1; p <= np; p++) { a[p] = speed[row, p, "on"]; b[p] = speed[row, p, "off"]; q[p] = a[p] / b[p]; x[p] = cpu[row, p, "on"]; y[p] = cpu[row, p, "off"] }
    sort(a, np); sort(b, np); sort(q, np); sort(x, np); sort(y, np)
    mon = median(a, np); moff = median(b, np); mq = median(q, np)
    printf "%-18s %10.0f %10.0f %8.2f %6.2f-%-7.2f %12.2f %12.2f\n", row, mon, moff, mq, q[1], q[np], median(x, np), median(y, np)
  }
}
