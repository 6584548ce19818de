#!/usr/bin/env bash
# make demo: plb-mm under mpirun on this machine (config/demo.ini: a master
# and two workers, a real CPU PU and four emulated ones; with make MPI=0,
# in one process), verified, with its report; then the paper's five-machine cluster in the simulator under
# every policy, for comparison. make demo APP=bs|kmeans|grn runs that
# app's demo (config/APP-demo.ini) instead, verified, with its report.
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
if [ "${MPI:-1}" != 0 ] && command -v mpirun >/dev/null; then
	cmd=(mpirun --oversubscribe --bind-to none -np 3 "${cmd[@]}")
else
	echo "(built without MPI: one process, node a of the config only)"
fi
echo "== ${cmd[*]}"
"${cmd[@]}"
[ "$APP" = mm ] || exit 0
echo
scenario=config/sim/mm-5.ini
echo "== $BUILD/plbsim $scenario --policy all   (virtual time; ratio = makespan / lower bound)"
"$BUILD/plbsim" "$scenario" --policy all
