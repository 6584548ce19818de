# plb-grn end to end: in one process and under mpirun, every policy finds
# each target's best predictors, checked against the serial reference on
# every target; subset sizes 1-3, other level counts and alpha 0 too; a
# planted regulation read from TSV and from CSV is found and written the
# same; bad files and options are refused with file:line or the option,
# and what is accepted.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}

app_cluster_ini "$TMP/grn.ini"

verified() {    # verified WHAT: the run's verify line says ok
	grep -q 'plb-grn: verify (serial reference, every target, [0-9.]* s): ok' "$TMP/out" ||
		{ cat "$TMP/out"; check "$1: verify ok" false; }
}

for policy in plb-hac plb-hec hdss greedy static; do
	check "plb-grn $policy in one process" one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" \
		--genes 61 --samples 90 --policy $policy --verify --json
	verified "plb-grn $policy, one process"
	check "plb-grn $policy: coverage" test "$(json_get coverage_ok)" = True
	check "plb-grn $policy: 61 targets" test "$(json_get units)" = 61
done
check "the synthetic network's regulators are reported" \
	grep -q "plb-grn: true regulators found: [0-9]* of 98 " "$TMP/out"
for shape in "--size 1 --levels 8" "--size 3 --levels 4 --genes 23" "--size 2 --levels 2 --alpha 0"; do
	# shellcheck disable=SC2086 # the shape is words
	check "plb-grn $shape" one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --genes 40 $shape --verify
	verified "plb-grn $shape"
done

# a planted regulation: T's level is (A + B) mod 3, every pair of levels
# of A and B in 13 of the 117 samples, so that each gene has 39 samples a
# level and the rank cut finds the levels exactly; the expression is the
# level plus noise; ten other genes at random; TSV with a header, and CSV
python3 - "$TMP" <<'PY'
import random, sys
random.seed(3)
s = 117
pairs = [(a, b) for a in range(3) for b in range(3)] * 13
random.shuffle(pairs)
def balanced():
    l = [0, 1, 2] * 39
    random.shuffle(l)
    return l
lv = {"N%d" % i: balanced() for i in range(10)}
lv["A"], lv["B"] = [a for a, b in pairs], [b for a, b in pairs]
lv["T"] = [(a + b) % 3 for a, b in pairs]
genes = sorted(lv)
expr = {g: ["%.4f" % (l + random.random() * 0.5) for l in lv[g]] for g in genes}
with open(sys.argv[1] + "/expr.tsv", "w") as f:
    f.write("# a planted regulation\ngene\t" + "\t".join("s%d" % i for i in range(s)) + "\n")
    for g in genes:
        f.write(g + "\t" + "\t".join(expr[g]) + "\n")
with open(sys.argv[1] + "/expr.csv", "w") as f:
    for g in genes:
        f.write(g + "," + ",".join(expr[g]) + "\n")
PY
check "plb-grn --input TSV" one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --input "$TMP/expr.tsv" \
	--verify --output "$TMP/o1.tsv"
verified "plb-grn --input TSV"
check "--output: a header and one line a gene" test "$(wc -l <"$TMP/o1.tsv")" = 14
check "--output's header" test "$(head -1 "$TMP/o1.tsv")" = "$(printf 'target\tpredictor1\tpredictor2\tmce_bits')"
check "T's predictors are A and B, with no entropy left" grep -q "^T	A	B	0$" "$TMP/o1.tsv"
check "plb-grn --input CSV" one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --input "$TMP/expr.csv" \
	--output "$TMP/o2.tsv"
check "TSV and CSV: the same answer" cmp "$TMP/o1.tsv" "$TMP/o2.tsv"

# bad files: file:line, what is wrong, what is accepted
printf 'gene\ts1\ts2\nA\t1\t2\nB\t1\tNA\n' >"$TMP/na.tsv"
check "a missing value is refused" test "$(one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --input "$TMP/na.tsv"; echo $?)" = 1
check "... naming file:line" grep -q "na.tsv:3: field 3 = 'NA'; accepted: a finite number" "$TMP/out"
printf 'A,1,2\nB,1,2,3\n' >"$TMP/ragged.csv"
check "a ragged line is refused" test "$(one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --input "$TMP/ragged.csv"; echo $?)" = 1
check "... naming file:line" grep -q "ragged.csv:2: 3 values where the first gene has 2" "$TMP/out"
printf 'A,1,2\nB,3,4\n' >"$TMP/two.csv"
check "too few genes for --size" test "$(one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --input "$TMP/two.csv"; echo $?)" = 1
check "... says so" grep -q "2 genes: --size 2 needs at least 3" "$TMP/out"

# the command line
check "--help" one_run "$BUILD/plb-grn" --help
check "--help prints the usage" grep -q "usage: mpirun -np K plb-grn" "$TMP/out"
check "no data" test "$(one_run "$BUILD/plb-grn" --config "$TMP/grn.ini"; echo $?)" = 2
check "... says what is required" grep -q -- "--genes N or --input FILE is required" "$TMP/out"
check "--size 4" test "$(one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --genes 9 --size 4; echo $?)" = 2
check "... says what is accepted" grep -q -- "--size 4: accepted: 1, 2 or 3" "$TMP/out"
check "--levels 8 --size 2: too many cells" test "$(one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --genes 9 --levels 8; echo $?)" = 2
check "... says the limit" grep -q "C^(K+1) must be at most 256" "$TMP/out"
check "--samples with --input" test "$(one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --input "$TMP/expr.csv" --samples 5; echo $?)" = 2
check "--alpha -1" test "$(one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --genes 9 --alpha -1; echo $?)" = 2
check "--runs is not an option here" test "$(one_run "$BUILD/plb-grn" --config "$TMP/grn.ini" --genes 9 --runs 2; echo $?)" = 2

if have_mpirun; then
	for policy in plb-hac greedy; do
		check "plb-grn $policy under mpirun" mpi_run 3 "$BUILD/plb-grn" --config "$TMP/grn.ini" \
			--genes 61 --samples 90 --policy $policy --verify --json
		verified "plb-grn $policy, mpirun"
		check "plb-grn $policy under mpirun: coverage" test "$(json_get coverage_ok)" = True
	done
	check "TSV input under mpirun" mpi_run 3 "$BUILD/plb-grn" --config "$TMP/grn.ini" --input "$TMP/expr.tsv" \
		--output "$TMP/o3.tsv"
	check "the same answer under mpirun" cmp "$TMP/o1.tsv" "$TMP/o3.tsv"
	check "a bad file under mpirun ends every rank" test "$(mpi_run 3 "$BUILD/plb-grn" --config "$TMP/grn.ini" --input "$TMP/na.tsv"; echo $?)" -ne 0
	check "... naming file:line" grep -q "na.tsv:3: field 3" "$TMP/out"
fi
finish
