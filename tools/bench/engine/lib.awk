# lib.awk: helpers of the benchmark summaries (awk -f lib.awk -f SCRIPT.awk DATA); mawk has
# no asort.
# The value of KEY in a line of "key=value" words, or "".
function kv(line, key,   m) {
  if (match(line, "(^| )" key "=[^ ]+")) { m = substr(line, RSTART, RLENGTH); sub(/^ /, "", m); return substr(m, length(key) + 2) }
  return ""
}
function sort(a, n,   i, j, t) {  # insertion sort of a[1..n], ascending
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
}
function median(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }  # a sorted
