#!/usr/bin/env bash
# report.sh OUT TOTAL_SECONDS: each tier's wall time (from OUT/tiers.tsv) and
# the 20 slowest tests of the run (go test -v's "--- PASS/FAIL" lines and
# the unit tiers' package lines, from OUT/*.log).
OUT=$1 total=$2
echo
echo "=== tiers (wall time)"
if [ -f "$OUT/tiers.tsv" ]; then
	awk -F'\t' '{ printf "  %-20s %8.1fs  %s\n", $1, $2, ($3 == 0 ? "ok" : "FAILED (exit " $3 ")") }' "$OUT/tiers.tsv"
fi
printf '  %-20s %8ds\n' total "$total"
echo "=== the 20 slowest tests"
for f in "$OUT"/*.log; do
	[ -f "$f" ] || continue
	t=$(basename "$f" .log)
	# top-level tests and subtests of go test -v
	sed -nE 's/^ *--- (PASS|FAIL|SKIP): ([^ ]+) \(([0-9.]+)s\).*/\3\t\2 (\1)/p' "$f" | sed "s/\$/\t$t/"
	# packages of a unit tier (an e2e tier's one package is its tier's time)
	case $t in unit | lab-unit) ;; *) continue ;; esac
	sed -nE 's/^(ok|FAIL)[[:space:]]+([^[:space:]]+)[[:space:]]+([0-9.]+)s.*/\3\tpackage \2 (\1)/p' "$f" | sed "s/\$/\t$t/"
done | sort -t$'\t' -k1,1 -g -r | head -20 | awk -F'\t' '{ printf "  %8.1fs  %-60s %s\n", $1, $2, $3 }'
