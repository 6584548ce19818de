#!/usr/bin/env bash
# make demo: plb-mm under mpirun on this machine (config/demo.ini: a master
# and two workers, a real CPU PU and four emulated ones; with make MPI=0,
# in one process), verified, with its report; then the paper's five-machine cluster in the simulator under
# every policy, for comparison.
set -euo pipefail
BUILD=${BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmd=("$BUILD/plb-mm" --config config/demo.ini --n 4096 --prec single --verify)
if [ "${MPI:-1}" != 0 ] && command -v mpirun >/dev/null; then
	cmd=(mpirun --oversubscribe --bind-to none -np 3 "${cmd[@]}")
else
	echo "(built without MPI: one process, node a of the config only)"
fi
echo "== ${cmd[*]}"
"${cmd[@]}"
echo
scenario=config/sim/mm-5.ini
echo "== $BUILD/plbsim $scenario --policy all   (virtual time; ratio = makespan / lower bound)"
"$BUILD/plbsim" "$scenario" --policy all
