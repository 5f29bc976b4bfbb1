# compare_table.sh — sourced by bench/compare.sh and bench/compare_crosshost.sh:
# the old/new table both print from their RESULTS file (RESULT lines whose
# keys start with old_ or new_, one per round).
#
#   med KEY           the median of every RESULT line with key KEY ("nan" if none)
#   ratio A B         A / B to two places ("n/a" when B is not positive)
#   table_head        the table's header row and rule
#   row TITLE KEY     one row: the medians of old_KEY and new_KEY, and new/old
med() {
  awk -v k="$1" '$1 == "RESULT" && $2 == k { v[n++] = $3 } END {
    if (!n) { print "nan"; exit }
    for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    print (n % 2) ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2 }' "$RESULTS"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
table_line() { printf '| %-48s | %10s | %10s | %8s |\n' "$@"; }
table_head() {
  table_line "metric" "old" "new" "new/old"
  printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' $(seq 50))" "$(printf -- '-%.0s' $(seq 12))" \
    "$(printf -- '-%.0s' $(seq 12))" "$(printf -- '-%.0s' $(seq 10))"
}
row() {
  local o n
  o=$(med "old_$2")
  n=$(med "new_$2")
  table_line "$1" "$o" "$n" "$(ratio "$n" "$o")"
}
