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
need_mpi() {    # skip the script (exit 77) in a build without MPI
	if [ "${MPI:-1}" = 0 ] || ! command -v mpirun >/dev/null; then
		echo "built without MPI (make MPI=0) or no mpirun: nothing to run under mpirun"
		exit 77
	fi
}
