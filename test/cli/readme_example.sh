# The task API example in README.md compiles (warnings as errors) against
# the built libraries and runs over every unit: under mpirun, or in one
# process in a build without MPI.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
python3 - "$TMP/square.c" <<'PY'
import sys
s = open("README.md").read()
a = s.index("```c\n") + 5
open(sys.argv[1], "w").write(s[a:s.index("```", a)])
PY
# shellcheck disable=SC2046
check "README example compiles" cc -Werror -o "$TMP/square" "$TMP/square.c" \
	$(make -s --no-print-directory BUILD="$BUILD" MPI="${MPI:-1}" app-flags)
printf '[run]\nunits = 1\n[node a]\ncpu = 1\nemu = e\n[model e]\nclass = gpu\ncompute = poly 0.001 1e-8\n' >"$TMP/sq.ini"
launch=()
if have_mpirun; then
	launch=(mpirun --oversubscribe --bind-to none -np 2)
elif [ "${MPI:-1}" != 0 ]; then
	finish
fi
# stdout and stderr apart (mpirun forwards them in 1 KiB chunks: merged, a
# line of one can be cut by the other), then together
check "README example runs" timeout 120 "${launch[@]}" "$TMP/square" --config "$TMP/sq.ini" >"$TMP/out" 2>"$TMP/err"
cat "$TMP/err" >>"$TMP/out"
check "every unit done" grep -q "1048576 of 1048576 done, coverage ok" "$TMP/out"
finish
