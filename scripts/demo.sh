#!/usr/bin/env bash
# make demo, in two parts.
#   1. What plb's balancer does on a real heterogeneous cluster, in the
#      simulator (virtual time, so this machine does not matter): the
#      PLB-HAC paper's five machines (12 PUs) under every policy.
#   2. The real runtime, as a verified run of the same algorithm on this
#      machine posing as a small cluster sized to its cores: a CPU team of
#      half its cores (1 below 4 cores) and emulated devices on the others
#      (each runs the real kernel on a core of its own, then waits out its
#      model: a device as fast as 1/1.25 to 1/4 of this machine's core at
#      this job, one with a large cost a block, so none needs more than the
#      core it has). plb-mm (make demo APP=bs|kmeans|grn: that app) on the
#      cluster under mpirun (one process with make MPI=0), verified, then
#      the same job on the CPU team alone, the two compared, and the run's
#      Gantt chart ($BUILD/demo-gantt.png), and the same cluster in
#      plbsim as on a machine with a core for each PU. Where the machine has fewer
#      cores than the cluster has PUs plus the master, PUs share cores, and
#      the demo says so: the timing then shows how this machine copes, not
#      what the cluster would do.
set -euo pipefail
BUILD=${BUILD:-build}
APP=${APP:-mm}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case $APP in
mm) job=(--n 4096 --prec single) units=4096 ;;
bs) job=(--n 16000000 --prec single) units=16000000 ;;
kmeans) job=(--n 2000000 --d 16 --k 16) units=2000000 ;;
grn) job=(--genes 600) units=600 ;;
*)
	echo "make demo: APP=$APP: accepted: mm (the default), bs, kmeans or grn" >&2
	exit 2
	;;
esac
mpi=0
[ "${MPI:-1}" != 0 ] && command -v mpirun >/dev/null && mpi=1

if [ "$APP" = mm ]; then
	scenario=config/sim/mm-5.ini
	echo "== 1. The balancer on the PLB-HAC paper's cluster, in the simulator"
	echo "   (5 machines, 12 PUs: CPUs, GPUs of four generations, Xeon Phis; matrix multiply;"
	echo "   virtual seconds; ratio = makespan / the lower bound no schedule can beat)"
	echo "== $BUILD/plbsim $scenario --policy all"
	"$BUILD/plbsim" "$scenario" --policy all
	echo
fi

cores=$(nproc)
team=$((cores >= 4 ? cores / 2 : 1))
nemu=$((cores - team - 1))
[ $nemu -lt 2 ] && nemu=2
[ $nemu -gt 6 ] && nemu=6
echo "== 2. The real runtime on this machine ($cores cores) as a small cluster: a CPU team of"
echo "   $team core(s) and $nemu emulated devices, verified, against the CPU team alone"

# the job on the CPU team alone first: its time per unit on one core sizes
# the emulated devices
cfg() { printf '[run]\nunits = 1\npolicy = plb-hac\n'; printf '%s\n' "$@"; }
cfg "[node a]" "cpu = $team" >"$BUILD/demo-alone.ini"
app=("$BUILD/plb-$APP")
makespan() { sed -n 's/^  makespan *\([0-9.]*\) s$/\1/p' "$1"; }
"${app[@]}" --config "$BUILD/demo-alone.ini" "${job[@]}" --quiet >"$BUILD/demo-alone.txt" 2>&1 ||
	{ cat "$BUILD/demo-alone.txt"; exit 1; }
alone=$(makespan "$BUILD/demo-alone.txt")
per=$(awk -v a="$alone" -v t="$team" -v u="$units" 'BEGIN { printf "%.6g", a * t / u }')

# the cluster: node a the CPU team and half the devices, node b the rest
# (one process runs node a only: all of them there)
factors=(1.25 2 3 1.5 2.5 4)
names=(gpu-fast gpu-slow cpu-core gpu-mid mic gpu-old)
emu_a=() emu_b=()
for ((k = 0; k < nemu; k++)); do
	if [ $mpi = 1 ] && ((k % 2)); then emu_b+=("${names[k]}"); else emu_a+=("${names[k]}"); fi
done
{
	echo "; made by make demo for this machine ($cores cores): a CPU team of $team"
	echo "; core(s) and $nemu emulated devices whose speeds are set from one core's"
	echo "; time per unit of this job ($per s, measured just before)"
	cfg "pipeline = 2" "[node a]" "host = *" "cpu = $team" "emu = ${emu_a[*]}"
	[ ${#emu_b[@]} -gt 0 ] && printf '[node b]\nhost = *\nemu = %s\n' "${emu_b[*]}"
	for ((k = 0; k < nemu; k++)); do
		n=${names[k]} f=${factors[k]}
		cls=gpu
		[ "$n" = cpu-core ] && cls=cpu
		[ "$n" = mic ] && cls=mic
		fixed=0.002
		[ "$n" = mic ] && fixed=0.05     # an offload device: a large cost a block
		printf '[model %s]\nclass = %s\ncompute = poly %s %s\n' "$n" "$cls" "$fixed" \
			"$(awk -v p="$per" -v f="$f" 'BEGIN { printf "%.6g", p * f }')"
	done
} >"$BUILD/demo-cluster.ini"

cmd=("${app[@]}" --config "$BUILD/demo-cluster.ini" "${job[@]}" --verify --trace "$BUILD/demo-trace.json")
if [ $mpi = 1 ]; then
	cmd=(mpirun --oversubscribe --bind-to none -np 3 "${cmd[@]}")
else
	echo "   (built without MPI: one process, every PU in node a)"
fi
echo "== ${cmd[*]}"
"${cmd[@]}" | tee "$BUILD/demo-report.txt"
c=$(makespan "$BUILD/demo-report.txt")
echo
awk -v c="$c" -v a="$alone" -v t="$team" 'BEGIN {
	printf "cluster %.3f s; its CPU team alone (cpu = %d, one process) %.3f s: the cluster is %.2fx as fast\n", c, t, a, a / c }'
# the same cluster in plbsim, as on a machine with a core for each PU and
# the master: the team an emulated PU at its measured rate
units_run=$(sed -n 's/^  units *\([0-9]*\) of [0-9]* done.*/\1/p' "$BUILD/demo-report.txt" | tail -n 1)
{
	sed -e "s/^units = 1$/units = ${units_run:-$units}/" -e "s/^cpu = $team$/emu = team ${emu_a[*]}/" \
		-e "/^emu = ${emu_a[*]}$/d" "$BUILD/demo-cluster.ini"
	printf '[model team]\nclass = cpu\ncompute = poly 0.001 %s\n' \
		"$(awk -v p="$per" -v t="$team" 'BEGIN { printf "%.6g", p / t }')"
} >"$BUILD/demo-sim.ini"
sed -e '/^\[node b\]/,/^emu = /d' -e "s/^emu = team .*/emu = team/" "$BUILD/demo-sim.ini" >"$BUILD/demo-sim-team.ini"
sc=$("$BUILD/plbsim" "$BUILD/demo-sim.ini" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['makespan_s'])" || echo nan)
st=$("$BUILD/plbsim" "$BUILD/demo-sim-team.ini" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['makespan_s'])" || echo nan)
awk -v c="$sc" -v a="$st" 'BEGIN {
	printf "in plbsim, with a core for every PU and the master: cluster %.3f s, its CPU team alone %.3f s: %.2fx as fast\n", c, a, a / c }'
need=$((team + nemu + 1))
if [ "$cores" -lt "$need" ]; then
	echo "(this machine has $cores cores for $((team + nemu)) PUs and the master: the emulated devices' real"
	echo " work shares cores with the team and the master, so this timing says how the machine copes"
	echo " with the load, not what such a cluster would do: the plbsim line above is that)"
fi
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
	scripts/plb-plot "$BUILD/demo-trace.json" -o "$BUILD/demo" | sed -n 's/^\(.*-gantt.png\)$/Gantt chart of the run: \1/p'
else
	echo "trace of the run: $BUILD/demo-trace.json (plb-plot needs python3-matplotlib to draw it)"
fi
