# Shared by the bench scripts (bench/bs.sh, grn.sh, kmeans.sh, runtime.sh): strict
# mode, the build folder, mpirun as root, a scratch folder $T removed on
# exit with a one-core cluster in it ($T/cpu1.ini: [node a] cpu = 1), and
# helpers. Source it after setting the script's own defaults.
set -euo pipefail
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
printf '[run]\nunits = 1\n[node a]\ncpu = 1\n' >"$T/cpu1.ini"
med() {         # med X...: the median
	python3 -c "import sys; v=sorted(float(x) for x in sys.argv[1:]); print(v[len(v)//2])" "$@"
}
makespan() {    # makespan: the makespan_s of the JSON report on stdin
	# all of it first: a python started beside the run (a pipe) took CPU
	# from the PU it measured (plb-grn in one process read 1.2x the
	# direct call's time that way, 1.0x without: docs/FIGURES.md)
	local j
	j=$(grep '^{')
	python3 -c "import json,sys; print(json.loads(sys.stdin.read())['makespan_s'])" <<<"$j"
}
