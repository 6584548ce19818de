#!/usr/bin/env bash
# make demo: plb-mm under mpirun on this machine (config/demo.ini: a master
# and two workers, a real CPU PU and four emulated ones; with make MPI=0,
# in one process), verified, with its report; the same job on the real CPU
# PU alone, for a one-line comparison; the run's Gantt chart
# ($BUILD/demo-gantt.png, from its trace); then the paper's five-machine
# cluster in the simulator under every policy, for comparison. make demo
# APP=bs|kmeans|grn runs that app's demo (config/APP-demo.ini) instead,
# verified, with its report, the comparison and the chart.
set -euo pipefail
BUILD=${BUILD:-build}
APP=${APP:-mm}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case $APP in
mm) cmd=("$BUILD/plb-mm" --config config/demo.ini --n 4096 --prec single --verify) ;;
bs) cmd=("$BUILD/plb-bs" --config config/bs-demo.ini --n 16000000 --prec single --verify) ;;
kmeans) cmd=("$BUILD/plb-kmeans" --config config/kmeans-demo.ini --n 2000000 --d 16 --k 16 --verify) ;;
grn) cmd=("$BUILD/plb-grn" --config config/grn-demo.ini --genes 600 --verify) ;;
*)
	echo "make demo: APP=$APP: accepted: mm (the default), bs, kmeans or grn" >&2
	exit 2
	;;
esac
# the same job on the cluster's real CPU PU alone (cmd[2] is the config)
alone=("${cmd[@]}")
alone[2]=$BUILD/demo-alone.ini
cmd+=(--trace "$BUILD/demo-trace.json")
if [ "${MPI:-1}" != 0 ] && command -v mpirun >/dev/null; then
	cmd=(mpirun --oversubscribe --bind-to none -np 3 "${cmd[@]}")
else
	echo "(built without MPI: one process, node a of the config only)"
fi
echo "== ${cmd[*]}"
"${cmd[@]}" | tee "$BUILD/demo-report.txt"
makespan() { sed -n 's/^  makespan *\([0-9.]*\) s$/\1/p' "$1"; }
# the real CPU PU alone: node a's cpu = 1, in one process, the same job
printf '[run]\nunits = 1\n[node a]\ncpu = 1\n' >"$BUILD/demo-alone.ini"
"${alone[@]}" --quiet >"$BUILD/demo-alone.txt" 2>&1 || { cat "$BUILD/demo-alone.txt"; exit 1; }
c=$(makespan "$BUILD/demo-report.txt") a=$(makespan "$BUILD/demo-alone.txt")
echo
awk -v c="$c" -v a="$a" 'BEGIN { printf "cluster %.3f s; its real CPU PU alone (one process, cpu = 1) %.3f s: the cluster takes %.2fx its time\n", c, a, c / a }'
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
	scripts/plb-plot "$BUILD/demo-trace.json" -o "$BUILD/demo" | sed -n 's/^\(.*-gantt.png\)$/Gantt chart of the run: \1/p'
else
	echo "trace of the run: $BUILD/demo-trace.json (plb-plot needs python3-matplotlib to draw it)"
fi
[ "$APP" = mm ] || exit 0
echo
scenario=config/sim/mm-5.ini
echo "== $BUILD/plbsim $scenario --policy all   (virtual time; ratio = makespan / lower bound)"
"$BUILD/plbsim" "$scenario" --policy all
