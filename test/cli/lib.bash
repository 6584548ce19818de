# Shared by the test/cli scripts: a scratch directory and assertions.
set -u
PLBSIM=${PLBSIM:-build/plbsim}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
check() {       # check DESCRIPTION COMMAND...: the command must succeed
	local what=$1; shift
	if ! "$@"; then echo "FAIL: $what"; fails=$((fails + 1)); fi
}
finish() { [ "$fails" -eq 0 ]; exit $?; }
# A script skips (exit 77) only for a part the build or the node truly
# lacks, and its last line then starts with the runner's words for it
# (test/run.sh: "no MPI in this build", "no CUDA in this build", "no GPU on
# this node").
have_mpirun() { # an MPI build must have mpirun: its absence is a failure
	[ "${MPI:-1}" = 0 ] && return 1
	command -v mpirun >/dev/null && return 0
	echo "FAIL: an MPI build (MPI=${MPI:-1}) but no mpirun on PATH"
	fails=$((fails + 1))
	return 1
}
need_mpi() {    # skip the script in a build without MPI
	if [ "${MPI:-1}" = 0 ]; then
		echo "no MPI in this build (make MPI=0): nothing to run under mpirun"
		exit 77
	fi
	have_mpirun || exit 1
}
# The runtime's scripts: output of the last run in $TMP/out.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Under AddressSanitizer (make SANITIZE=address test), what Open MPI and
# its libraries leave allocated at exit is not plb's: suppressed by
# library (test/lsan-openmpi.supp), which needs whole stacks (Open MPI is
# built without frame pointers) and components that keep their names
# (not dlclosed). Other builds ignore all three.
export OMPI_MCA_mca_base_component_disable_dlclose=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$PWD/test/lsan-openmpi.supp:print_suppressions=0:fast_unwind_on_malloc=0"
# Under a sanitizer (make SANITIZE=... test) every rank runs several times
# slower, and MPI_Init of 65 ThreadSanitizer ranks alone takes a minute
# here: the limits below are longer by this factor.
SLOW=1
[ -n "${SANITIZE:-}" ] && SLOW=4
mpi_run() {     # mpi_run NP PROGRAM ARGS...: under mpirun and a timeout
	# stdout, then stderr, in $TMP/out: mpirun forwards the two streams
	# in chunks of 1 KiB, so merged as they come a stderr line can land
	# inside a long JSON line of stdout
	local np=$1 rc; shift
	timeout $((120 * SLOW)) mpirun --oversubscribe --bind-to none -np "$np" "$@" >"$TMP/out" 2>"$TMP/out.err"
	rc=$?
	cat "$TMP/out.err" >>"$TMP/out"
	return $rc
}
one_run() {     # one_run PROGRAM ARGS...: in one process, under a timeout
	timeout $((120 * SLOW)) "$@" >"$TMP/out" 2>&1
}
joined() {      # joined FILE: the master's stderr there (PLB_LOG=info) says
	# every worker rank is past MPI_Init and the handshake
	grep -q "worker ranks joined" "$1"
}
taken_out() {   # taken_out LOG RANK HOST LO HI: the master's log says it took
	# rank RANK on HOST (a grep pattern) out for its silence, and its limit
	# follows the rule: at least LO s ([network] peer_timeout_min_s), 4x
	# its longest silence before, 3x its longest block out and 3x what
	# the blocks out owed the master's link (where it says), at most HI s
	# (peer_timeout_s), the silence past it (numbers as printed: to 0.05 s)
	local v
	v=$(grep -o "rank $2 ($3) has said nothing for .*: taken out of the run" "$1" | head -1 | sed -E \
		's/.*nothing for ([0-9.]+) s, longer than its limit of ([0-9.]+) s \(its longest silence before ([0-9.]+) s, its longest block out predicted at ([0-9.]+) s, (the blocks out owed the master.s link ([0-9.]+) s at [^;]*|the master.s link not measured yet and \[network\] link_gbps unset); \[network\] peer_timeout_min_s = ([0-9.]+) s, peer_timeout_s = ([0-9.]+) s\).*/\1 \2 \3 \4 \7 \8 \6/')
	[ -n "$v" ] && echo "$v" | awk -v lo="$4" -v hi="$5" '
		function atleast(x) { return $2 >= x - 0.02 || $2 >= hi - 0.005 }
		(NF == 6 || NF == 7) && $5 == lo && $6 == hi && $1 >= $2 - 0.05 && $2 <= hi + 0.005 &&
		atleast(lo) && atleast(4 * $3) && atleast(3 * $4) && atleast(3 * (NF == 7 ? $7 : 0)) { ok = 1 }
		END { if (!ok) print "taken out: " $0 " against [" lo ", " hi "]" > "/dev/stderr"; exit !ok }'
}
json_get() {    # json_get KEY: from the (last) JSON line of $TMP/out
	grep '^{' "$TMP/out" | tail -1 | python3 -c "import json,sys; print(json.loads(sys.stdin.read())['$1'])"
}
json_has() { json_get "$1" >/dev/null 2>&1; }
app_cluster_ini() {     # app_cluster_ini FILE [FAST_COMPUTE FAST_TRANSFER SLOW_COMPUTE]:
	# the apps' test cluster, two nodes (one real CPU PU, a fast and a
	# slow emulated one); the models default to a domain of cheap units
	# (a few us each)
	cat >"$1" <<INI
[run]
units = 1
pipeline = 2
[node a]
cpu = 1
emu = fast
[node b]
emu = slow fast
[model fast]
class = gpu
compute = ${2:-poly 0.001 2e-7}
transfer = ${3:-poly 1e-4 1e-8}
[model slow]
class = cpu
compute = ${4:-poly 0.001 1e-6}
noise = 0.05
INI
}
