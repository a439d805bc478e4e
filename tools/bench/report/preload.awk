# preload.awk: tools/bench/preload/bench.sh's Markdown -> RESULT lines (format: README.md).
#   | call | plain ns | shim-idle | ... |          header: the configurations
#   | open_close | 812 | 1.010 (820 ns) | ... |  ratio to plain (and ns) per configuration
#   | shim-all | 123.4 | 0.990 |                  JVM table: MB/s and ratio to plain
function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
/^\| call \| plain ns \|/ {
  n = split($0, h, "|"); ncfg = 0
  for (i = 4; i < n; i++) cfg[++ncfg] = trim(h[i])
  table = "percall"; next
}
/^\| configuration \| MB\/s \|/ { table = "jvm"; next }
/^\|---/ { next }
/^\|/ && table == "percall" {
  n = split($0, f, "|"); op = trim(f[2])
  printf "RESULT bench=preload case=%s/plain metric=ns_per_call value=%s\n", op, trim(f[3])
  for (i = 4; i < n; i++) {
    v = trim(f[i]); ratio = v; sub(/ .*/, "", ratio)
    ns = v; sub(/^[^(]*\(/, "", ns); sub(/ ns\).*/, "", ns)
    printf "RESULT bench=preload case=%s/%s metric=ratio_to_plain value=%s\n", op, cfg[i - 3], ratio
    printf "RESULT bench=preload case=%s/%s metric=ns_per_call value=%s\n", op, cfg[i - 3], ns
  }
  next
}
/^\|/ && table == "jvm" {
  split($0, f, "|")
  printf "RESULT bench=preload case=jvm/%s metric=MBps value=%s\n", trim(f[2]), trim(f[3])
  printf "RESULT bench=preload case=jvm/%s metric=ratio_to_plain value=%s\n", trim(f[2]), trim(f[4])
  next
}
/^$/ { table = "" }
/^RESULT / { print }
