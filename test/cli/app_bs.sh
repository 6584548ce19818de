# plb-bs end to end: in one process and under mpirun, every policy and
# both precisions price every option right (the serial reference and
# put-call parity); a CSV file's options give the prices the same options
# drawn from a seed give (drawn on the nodes: no input sent); --runs keeps
# a file's options on the nodes (later runs send under half the first
# run's bytes: blocks move between nodes as the balance changes, by
# timing, which moved 27% once on a loaded machine; test_resident_input
# holds the exact bytes); bad input files and options are refused with
# file:line or the option, and what is accepted.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}

app_cluster_ini "$TMP/bs.ini"

verified() {    # verified WHAT: the last run's verify line says ok
	grep -q 'plb-bs: verify (serial reference, put-call parity.*): ok' "$TMP/out" ||
		{ cat "$TMP/out"; check "$1: verify ok" false; }
}

for policy in plb-hac plb-hec hdss greedy static; do
	for prec in double single; do
		check "plb-bs $policy $prec in one process" one_run "$BUILD/plb-bs" --config "$TMP/bs.ini" \
			--n 30011 --prec $prec --policy $policy --verify --json
		verified "plb-bs $policy $prec, one process"
		check "plb-bs $policy $prec: coverage" test "$(json_get coverage_ok)" = True
		check "plb-bs $policy $prec: units" test "$(json_get units_done)" = 30011
	done
done

# the same options from a file and from the seed: the same prices, to the
# bit (the kernel's price of an option does not depend on the blocks, nor
# on whether it was drawn on the node or sent)
check "plb-bs --output" one_run "$BUILD/plb-bs" --config "$TMP/bs.ini" --n 500 --seed 4 --prec double \
	--output "$TMP/seeded.csv"
# the generator's options (kernels/bs/bs_cpu.c: value k of option j is
# splitmix64's number 5 j + k + 1 from the seed), as CSV with the columns
# shuffled and an extra one: draw_csv FILE SEED N
draw_csv() {
	python3 - "$@" <<'PY'
import sys
path, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lo, hi = [5, 1, 0.25, 0.01, 0.1], [30, 100, 10, 0.05, 0.5]
M, G = (1 << 64) - 1, 0x9E3779B97F4A7C15
def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)
base = mix(seed)
with open(path, "w") as f:
    f.write("# drawn from seed %d\nid,v,T,S,r,K\n" % seed)
    for j in range(n):
        v = [lo[k] + (hi[k] - lo[k]) * ((mix((base + (5 * j + k + 1) * G) & M) >> 11) * 2.0 ** -53)
             for k in range(5)]
        S, K, T, r, vol = v
        f.write("%d,%r,%r,%r,%r,%r\n" % (j, vol, T, S, r, K))
PY
}
draw_csv "$TMP/opts.csv" 4 500
check "plb-bs --input" one_run "$BUILD/plb-bs" --config "$TMP/bs.ini" --input "$TMP/opts.csv" --prec double \
	--output "$TMP/read.csv" --verify
verified "plb-bs --input"
check "the file's prices are the seed's" cmp "$TMP/seeded.csv" "$TMP/read.csv"
check "--output: a header and one line an option" test "$(wc -l <"$TMP/read.csv")" -eq 501

# bad input files: file:line, what is wrong and what is accepted
printf 'S,K,T,r,v\n10,20,1,0.01,0.2\n10,20,-1,0.01,0.2\n' >"$TMP/neg.csv"
check "a negative T is refused" test "$(one_run "$BUILD/plb-bs" --config "$TMP/bs.ini" --input "$TMP/neg.csv"; echo $?)" = 1
check "... naming file:line" grep -q "neg.csv:3: T = '-1'; accepted: a finite number > 0" "$TMP/out"
printf 'S,K,T,r\n' >"$TMP/cols.csv"
check "a missing column is refused" test "$(one_run "$BUILD/plb-bs" --config "$TMP/bs.ini" --input "$TMP/cols.csv"; echo $?)" = 1
check "... naming it" grep -q "cols.csv:1: the header has no column v" "$TMP/out"
check "a missing file is refused" test "$(one_run "$BUILD/plb-bs" --config "$TMP/bs.ini" --input "$TMP/none.csv"; echo $?)" = 1
check "... naming it" grep -q "none.csv: cannot open" "$TMP/out"

# the command line
check "--help" one_run "$BUILD/plb-bs" --help
check "--help prints the usage" grep -q "usage: mpirun -np K plb-bs" "$TMP/out"
check "--n and --input together" test "$(one_run "$BUILD/plb-bs" --config "$TMP/bs.ini" --n 5 --input "$TMP/opts.csv"; echo $?)" = 2
check "... say so" grep -q "exclude each other" "$TMP/out"
check "neither --n nor --input" test "$(one_run "$BUILD/plb-bs" --config "$TMP/bs.ini"; echo $?)" = 2
check "--prec half" test "$(one_run "$BUILD/plb-bs" --config "$TMP/bs.ini" --n 5 --prec half; echo $?)" = 2
check "... says what is accepted" grep -q "prec half: accepted: single or double" "$TMP/out"

if have_mpirun; then
	for policy in plb-hac greedy; do
		for prec in double single; do
			check "plb-bs $policy $prec under mpirun" mpi_run 3 "$BUILD/plb-bs" --config "$TMP/bs.ini" \
				--n 30011 --prec $prec --policy $policy --verify --json
			verified "plb-bs $policy $prec, mpirun"
			check "plb-bs $policy $prec, mpirun: coverage" test "$(json_get coverage_ok)" = True
			check "plb-bs $policy $prec, mpirun: MPI" test "$(json_get runtime)" = mpi
		done
	done
	check "plb-bs --input under mpirun" mpi_run 3 "$BUILD/plb-bs" --config "$TMP/bs.ini" --input "$TMP/opts.csv" \
		--prec double --output "$TMP/mpi.csv" --verify
	verified "plb-bs --input, mpirun"
	check "the same prices under mpirun" cmp "$TMP/seeded.csv" "$TMP/mpi.csv"
	# drawn options are drawn on the nodes: no input is sent, only the
	# shared data (the seed) and the blocks' headers, under 5% of the
	# options' 40 bytes each; every price comes back
	check "plb-bs --n under mpirun" mpi_run 3 "$BUILD/plb-bs" --config "$TMP/bs.ini" --n 30011 \
		--prec double --json
	check "drawn options: under 2 bytes an option sent (got $(json_get bytes_sent))" \
		python3 -c "import sys; sys.exit(not float(sys.argv[1]) < 30011 * 2)" "$(json_get bytes_sent)"
	check "drawn options: every price received (got $(json_get bytes_received))" \
		python3 -c "import sys; sys.exit(not float(sys.argv[1]) >= 30011 * 16)" "$(json_get bytes_received)"
	draw_csv "$TMP/big.csv" 1 30011
	check "plb-bs --input --runs 3 under mpirun" mpi_run 3 "$BUILD/plb-bs" --config "$TMP/bs.ini" \
		--input "$TMP/big.csv" --runs 3 --verify --json
	verified "plb-bs --runs 3"
	python3 - "$TMP/out" <<'PY' || check "plb-bs --runs 3: later runs send under half the first's bytes" false
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(runs) == 3 and all(r["coverage_ok"] for r in runs), runs
assert runs[0]["bytes_sent"] > 30011 * 40, runs[0]["bytes_sent"]
assert all(r["bytes_sent"] < 0.5 * runs[0]["bytes_sent"] for r in runs[1:]), [r["bytes_sent"] for r in runs]
PY
	check "a bad file under mpirun ends every rank" test "$(mpi_run 3 "$BUILD/plb-bs" --config "$TMP/bs.ini" --input "$TMP/neg.csv"; echo $?)" -ne 0
	check "... naming file:line" grep -q "neg.csv:3: T = '-1'" "$TMP/out"
fi
finish
