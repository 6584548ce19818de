# scripts/gen-cluster.py: every family draws a scenario that plbsim reads
# and runs to full coverage under every policy; the same FAMILY:SEED gives
# the same file, another seed another; bad arguments are refused with exit 2.
. test/cli/lib.bash
GEN="python3 scripts/gen-cluster.py"
for fam in $($GEN --families | awk '{print $1}'); do
	for seed in 1 2; do
		check "$fam:$seed draws a scenario" sh -c "$GEN $fam:$seed > $TMP/$fam-$seed.ini"
		check "$fam:$seed runs with full coverage under every policy" sh -c \
			"'$PLBSIM' $TMP/$fam-$seed.ini --policy all --json --solve-us 100 > $TMP/out &&
			 grep -c '\"coverage_ok\":[[:space:]]*true' $TMP/out | grep -qx 5"
	done
	check "$fam:1 is the same file twice" sh -c "$GEN $fam:1 | cmp -s - $TMP/$fam-1.ini"
	check "$fam:1 and $fam:2 differ" sh -c "! cmp -s $TMP/$fam-1.ini $TMP/$fam-2.ini"
done
check "the file states its family and seed" grep -q "gen-cluster.py mixed:1" "$TMP/mixed-1.ini"
# the short family's 1-20 ms a block: t0 + a xs / R, as each model's comment states them
for seed in 1 2 3 4 5 6 7 8; do
	check "short:$seed: every model's cost a block (t0 + a xs / R) is 1-20 ms" sh -c \
		"$GEN short:$seed | python3 -c '
import re, sys
c = [float(t0) + float(a) * float(xs) / float(R) for R, t0, a, xs in re.findall(
    r\"R = ([0-9.e+-]+) units/s, t0 = ([0-9.e+-]+) s, a = ([0-9.e+-]+), xs = ([0-9.e+-]+)\", sys.stdin.read())]
sys.exit(not c or not all(0.00099 <= x <= 0.0201 for x in c))'"
done
for bad in "" "mixed" "nosuch:1" "mixed:x" "mixed:-1"; do
	check "'$bad' is refused with exit 2 and a usage line" sh -c \
		"$GEN $bad > $TMP/o 2> $TMP/e; test \$? -eq 2 && grep -q 'gen-cluster.py' $TMP/e && ! test -s $TMP/o"
done
finish
