# fuse.awk: tools/bench/fuse/bench.sh's table -> RESULT lines (format: README.md).
#   test  direct  nfsshim-fuse  bindfs  shim/direct  shim/bindfs
#   seq write 1M+fsync (MiB/s)   812   640   301   0.79   2.13
#   daemon CPU seconds per GiB (seq write+read): nfsshim-fuse 1.23, bindfs 2.34
/^test +direct +nfsshim-fuse +bindfs/ { table = 1; next }
table && NF >= 6 && $NF ~ /^[0-9.]+$/ && $(NF - 4) ~ /^[0-9.]+$/ {
  label = $0; sub(/ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ *$/, "", label)
  unit = label; sub(/^.*\(/, "", unit); sub(/\).*$/, "", unit); gsub(/\//, "_per_", unit)
  sub(/ *\(.*$/, "", label); gsub(/[^A-Za-z0-9.+]+/, "_", label)
  printf "RESULT bench=fuse case=%s/direct metric=%s value=%s\n", label, unit, $(NF - 4)
  printf "RESULT bench=fuse case=%s/nfsshim-fuse metric=%s value=%s\n", label, unit, $(NF - 3)
  printf "RESULT bench=fuse case=%s/bindfs metric=%s value=%s\n", label, unit, $(NF - 2)
  printf "RESULT bench=fuse case=%s metric=ratio_shim_to_direct value=%s\n", label, $(NF - 1)
  printf "RESULT bench=fuse case=%s metric=ratio_shim_to_bindfs value=%s\n", label, $NF
  next
}
/^daemon CPU seconds per GiB/ {
  line = $0; sub(/^.*: /, "", line); n = split(line, parts, ", ")
  for (i = 1; i <= n; i++) {
    split(parts[i], kv, " ")
    printf "RESULT bench=fuse case=cpu/%s metric=cpu_s_per_GiB value=%s\n", kv[1], kv[2]
  }
}
/^RESULT / { print }
