# Every file a run will write is checked at start, not after the job: an
# output option (plb-mm --output, plb-bs --output, plb-kmeans --labels and
# --centroids, plb-grn --output) or --models whose folder is missing, or
# that names a folder, is refused before anything runs (exit 1, no
# report), with the option, the path and the reason; an existing file is
# neither truncated nor replaced by the check, and a writable new path
# runs and is written.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
app_cluster_ini "$TMP/c.ini"

refused() {     # refused WHAT PATTERN PROGRAM ARGS...
	local what=$1 pat=$2
	shift 2
	one_run "$@"
	local rc=$?
	check "$what: exit 1 (got $rc)" [ "$rc" -eq 1 ]
	check "$what: says why (got: $(head -c 300 "$TMP/out"))" grep -q -- "$pat" "$TMP/out"
	check "$what: nothing ran" eval '! grep -q "makespan\|coverage" "$TMP/out"'
}
gone=/nonexistent-plb-test/out
refused "plb-mm --output" "--output $gone: its folder /nonexistent-plb-test does not exist" \
	"$BUILD/plb-mm" --config "$TMP/c.ini" --n 64 --output "$gone"
refused "plb-bs --output" "--output $gone: its folder" \
	"$BUILD/plb-bs" --config "$TMP/c.ini" --n 1000 --output "$gone"
refused "plb-kmeans --labels" "--labels $gone: its folder" \
	"$BUILD/plb-kmeans" --config "$TMP/c.ini" --n 1000 --d 4 --k 3 --labels "$gone"
refused "plb-kmeans --centroids" "--centroids $gone: its folder" \
	"$BUILD/plb-kmeans" --config "$TMP/c.ini" --n 1000 --d 4 --k 3 --centroids "$gone"
refused "plb-grn --output" "--output $TMP is a folder" \
	"$BUILD/plb-grn" --config "$TMP/c.ini" --genes 20 --output "$TMP"
refused "--models" "--models $gone: its folder" \
	"$BUILD/plb-null" --config "$TMP/c.ini" --units 1000 --models "$gone"
sed "s|^\[run\]|[run]\nmodels = $gone|" "$TMP/c.ini" >"$TMP/c2.ini"
refused "[run] models" "c2.ini: \[run\] models = $gone: its folder" \
	"$BUILD/plb-null" --config "$TMP/c2.ini" --units 1000

# an existing file is left as it was when another path is refused
echo "keep me" >"$TMP/old.bin"
touch -d "2001-01-01" "$TMP/old.bin"
refused "plb-mm --output OLD --models BAD" "--models $gone" \
	"$BUILD/plb-mm" --config "$TMP/c.ini" --n 64 --output "$TMP/old.bin" --models "$gone"
check "the existing file is untouched" [ "$(cat "$TMP/old.bin")" = "keep me" ]
check "... and its time too" [ "$(stat -c %Y "$TMP/old.bin")" = "$(date -d 2001-01-01 +%s)" ]

# a new file in a writable folder: the run goes on and writes it
check "plb-mm --output NEW runs" one_run "$BUILD/plb-mm" --config "$TMP/c.ini" --n 64 --output "$TMP/new.bin"
check "... and writes it ($(stat -c %s "$TMP/new.bin" 2>/dev/null) bytes)" \
	[ "$(stat -c %s "$TMP/new.bin" 2>/dev/null)" = $((64 * 64 * 8)) ]
finish
