# ThreadSanitizer on one process: the master and the in-process worker are
# threads of the app, and a CPU PU's team more. plb-null and plb-mm (a
# team of two cores, pipelining, emulated PUs, two runs; the 2-D product;
# plb-null on a pipeline scenario, whose slots' threads ask the node's
# scheduler) built with
# SANITIZE=thread in their own build directory ($BUILD/tsan, without MPI
# or CUDA) run clean: exit 0 and no report. The log's host name was
# written by the main thread while the worker thread, started before,
# read it (every one-process run exited 66).
. test/cli/lib.bash
B=${BUILD:-build}/tsan
check "TSan build" make -s --no-print-directory BUILD="$B" SANITIZE=thread CUDA=0 MPI=0 \
	"$B/plb-null" "$B/plb-mm" >"$TMP/build" 2>&1 || { cat "$TMP/build"; finish; }
printf '[run]\nunits = 1\npipeline = 2\n[node a]\ncpu = 2\nemu = e f\n[model e]\nclass = gpu\ncompute = poly 0.001 1e-8\n[model f]\nclass = cpu\ncompute = poly 0.001 1e-7\n' >"$TMP/team.ini"
no_report() { ! grep -q "ThreadSanitizer" "$TMP/out"; }
clean() {       # clean WHAT PROGRAM ARGS...: exit 0 and no ThreadSanitizer report
	local what=$1; shift
	timeout 300 "$@" >"$TMP/out" 2>&1
	local rc=$?
	check "$what: exit 0 (got $rc)" [ "$rc" -eq 0 ]
	check "$what: no ThreadSanitizer report" no_report
	grep -m1 -A12 "WARNING: ThreadSanitizer" "$TMP/out"
}
clean "plb-null" "$B/plb-null" --config test/data/small.ini
clean "plb-mm, a team of two" "$B/plb-mm" --config "$TMP/team.ini" --n 384 --verify --runs 2
# the 2-D product: the communication thread gives each PU its step and
# takes in pivots while the team and the emulated PUs compute
clean "plb-mm --layout 2d, a team of two" "$B/plb-mm" --config "$TMP/team.ini" --n 384 --block 64 \
	--layout 2d --verify
# a pipeline: each slot's thread asks the node's scheduler when its task
# ends, beside the communication thread and the team's other core
printf '[run]\nunits = 60\nwindow = 6\n[node a]\ncpu = 2\nemu = g\n[model g]\nclass = gpu\ncompute = poly 0 0.001\n[op R]\ncpu = 1\ngpu = 0.5\n[op F]\nafter = R\ntasks = 3\ncpu = 2\ngpu = 0.3\n[op S]\nafter = R\ncpu = 1\n' >"$TMP/pipe.ini"
clean "plb-null, a pipeline on a team of two and an emulated GPU" "$B/plb-null" --config "$TMP/pipe.ini" --runs 2
sed 's/^window = 6/window = 6\npipeline = 2/' "$TMP/pipe.ini" >"$TMP/pipe2.ini"
clean "plb-null, the same two tasks a slot" "$B/plb-null" --config "$TMP/pipe2.ini" --scheduler heft
finish
