# plb-kmeans end to end: in one process and under mpirun, every policy
# runs Lloyd's iterations whose last one verifies (every label a nearest
# centroid, the reduction's sums those of the labelled points); the points
# stay on the nodes after the first iteration; the same points read from
# CSV and from the raw format give the same centroids, to the bit; bad
# files and options are refused with file:line (raw: the byte) or the
# option, and what is accepted.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}

app_cluster_ini "$TMP/km.ini"

verified() {    # verified WHAT: the last run's verify line says ok
	grep -q 'plb-kmeans: verify (serial nearest centroids and sums, in double): ok' "$TMP/out" ||
		{ cat "$TMP/out"; check "$1: verify ok" false; }
}

for policy in plb-hac plb-hec hdss greedy static; do
	check "plb-kmeans $policy in one process" one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" \
		--n 20011 --d 5 --k 7 --iters 4 --policy $policy --verify --json
	verified "plb-kmeans $policy, one process"
	check "plb-kmeans $policy: coverage" test "$(json_get coverage_ok)" = True
done

# the points as CSV (with a header) and raw: the same centroids
python3 - "$TMP" <<'PY'
import random, struct, sys
random.seed(5)
pts = [[random.gauss(c, 1.0) for c in centre] for centre in ([0, 0, 0], [8, 8, 0], [0, 8, 8]) for _ in range(700)]
random.shuffle(pts)
pts = [[struct.unpack("<f", struct.pack("<f", x))[0] for x in p] for p in pts]   # float32 values
with open(sys.argv[1] + "/pts.csv", "w") as f:
    f.write("# 2100 points, 3 clusters\nx,y,z\n")
    for p in pts:
        f.write(",".join(repr(x) for x in p) + "\n")
with open(sys.argv[1] + "/pts.raw", "wb") as f:
    f.write(b"PLBKMF32" + struct.pack("<qq", len(pts), 3))
    for p in pts:
        f.write(struct.pack("<3f", *p))
PY
check "plb-kmeans --input CSV" one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --input "$TMP/pts.csv" \
	--k 3 --verify --centroids "$TMP/c1" --labels "$TMP/l1"
verified "plb-kmeans --input CSV"
check "converged" grep -q "^converged after" "$TMP/out"
check "plb-kmeans --input raw" one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --input "$TMP/pts.raw" \
	--k 3 --verify --centroids "$TMP/c2"
verified "plb-kmeans --input raw"
check "CSV and raw: the same centroids" cmp "$TMP/c1" "$TMP/c2"
check "--centroids: 3 lines of 3 numbers" test "$(grep -c '^[-0-9.e]*,[-0-9.e]*,[-0-9.e]*$' "$TMP/c1")" = 3
check "--labels: one a point, 0..2" test "$(grep -c '^[012]$' "$TMP/l1")" = 2100
python3 - "$TMP/c1" <<'PY' || check "the three centres found (within 0.2)" false
import sys
cs = sorted(tuple(float(x) for x in l.split(",")) for l in open(sys.argv[1]))
want = sorted([(0, 0, 0), (8, 8, 0), (0, 8, 8)])
assert all(max(abs(a - b) for a, b in zip(c, w)) < 0.2 for c, w in zip(cs, want)), cs
PY

# bad files: file:line (raw: the byte), what is wrong, what is accepted
printf 'x,y\n1,2\n3,oops\n' >"$TMP/bad.csv"
check "a bad number is refused" test "$(one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --input "$TMP/bad.csv" --k 1; echo $?)" = 1
check "... naming file:line" grep -q "bad.csv:3: field 2 = 'oops'; accepted: a finite number" "$TMP/out"
printf '1,2\n3,4,5\n' >"$TMP/ragged.csv"
check "a ragged line is refused" test "$(one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --input "$TMP/ragged.csv" --k 1; echo $?)" = 1
check "... naming file:line" grep -q "ragged.csv:2: 3 numbers where the first point has 2" "$TMP/out"
head -c 40 "$TMP/pts.raw" >"$TMP/short.raw"
check "a raw file cut short is refused" test "$(one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --input "$TMP/short.raw" --k 1; echo $?)" = 1
check "... naming the byte" grep -q "short.raw: byte 40: the data end early" "$TMP/out"
check "more clusters than points" test "$(one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --n 5 --d 2 --k 6; echo $?)" = 1
check "... says so" grep -q "more clusters than the 5 points" "$TMP/out"

# the command line
check "--help" one_run "$BUILD/plb-kmeans" --help
check "--help prints the usage" grep -q "usage: mpirun -np K plb-kmeans" "$TMP/out"
check "no --n, --d, --k: the default size runs" one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --iters 1
check "... 1000000 points" grep -q "1000000 of 1000000 done" "$TMP/out"
check "--k 16 (the default) over 5 points: refused" test "$(one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --n 5 --d 2; echo $?)" = 1
check "... saying why" grep -q -- "--k 16: more clusters than the 5 points" "$TMP/out"
check "--input with --n: refused" test "$(one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --input x.csv --n 5; echo $?)" = 2
check "--init bad" test "$(one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --n 5 --d 2 --k 2 --init best; echo $?)" = 2
check "... says what is accepted" grep -q "init best: accepted: kmeans++ or random" "$TMP/out"
check "--runs is not an option here" test "$(one_run "$BUILD/plb-kmeans" --config "$TMP/km.ini" --n 5 --d 2 --k 2 --runs 3; echo $?)" = 2

if have_mpirun; then
	for policy in plb-hac greedy; do
		check "plb-kmeans $policy under mpirun" mpi_run 3 "$BUILD/plb-kmeans" --config "$TMP/km.ini" \
			--n 20011 --d 5 --k 7 --iters 4 --init random --policy $policy --verify --json
		verified "plb-kmeans $policy, mpirun"
	done
	python3 - "$TMP/out" <<'PY' || check "plb-kmeans under mpirun: iterations after the first train nothing and send no points" false
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(runs) >= 2 and all(r["coverage_ok"] and r["runtime"] == "mpi" for r in runs), runs
# a point is 20 bytes: later runs send headers, centroids and stray blocks only
assert all(r["training_blocks"] == 0 for r in runs[1:]), [r["training_blocks"] for r in runs]
assert all(r["bytes_sent"] < 0.5 * runs[0]["bytes_sent"] for r in runs[1:]), [r["bytes_sent"] for r in runs]
PY
	# labels placed straight into the job's output, partial sums from
	# the head of the same DONE (PLB_MPI_APART_MIN=1: every block's apart)
	check "plb-kmeans, outputs apart" mpi_run 3 -x PLB_MPI_APART_MIN=1 -x PLB_LOG=debug "$BUILD/plb-kmeans" \
		--config "$TMP/km.ini" --n 20011 --d 5 --k 7 --iters 4 --init random --verify
	verified "plb-kmeans, outputs apart"
	check "plb-kmeans, outputs apart: received in place" \
		grep -qE 'master: [1-9][0-9]* of [0-9]+ block outputs sent apart were received in place' "$TMP/out"
	check "CSV input under mpirun" mpi_run 3 "$BUILD/plb-kmeans" --config "$TMP/km.ini" --input "$TMP/pts.csv" \
		--k 3 --verify --centroids "$TMP/c3"
	verified "plb-kmeans --input CSV, mpirun"
	check "the same centroids under mpirun" cmp "$TMP/c1" "$TMP/c3"
	check "a bad file under mpirun ends every rank" test "$(mpi_run 3 "$BUILD/plb-kmeans" --config "$TMP/km.ini" --input "$TMP/bad.csv" --k 1; echo $?)" -ne 0
	check "... naming file:line" grep -q "bad.csv:3: field 2" "$TMP/out"
fi
finish
