#!/usr/bin/env bash
# make bench (runtime part): the MPI runtime's own costs, on this machine.
#  1. master throughput: 8 workers x 8 zero-time emulated PUs, greedy
#     policy with 1-unit blocks, so every block is a full round trip;
#     then one process with 8 such PUs. Besides completions per second
#     (all ranks share this machine's cores), the master thread's own CPU
#     per block: what the master could serve on a core of its own;
#  2. throughput under load: a real CPU PU and a kernel that does nothing,
#     idle and beside two busy loops at nice 0, in one process and under
#     mpirun;
#  3. the same scenario in plbsim and in the runtime (plb-null): ratio
#     against ratio (the paper's clusters, device times x 0.05 so a run
#     takes seconds);
#  4. an idle worker's CPU use (the master holds 3 s before its run).
# Figures are printed, not asserted: this machine is shared and noisy.
SEEDS=${SEEDS:-3}
. "$(dirname "$0")/lib.bash"
mpi() { timeout 600 mpirun --oversubscribe --bind-to none "$@"; }
jget() { python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print(d['$1'])"; }

echo "== master throughput: zero-time emulated PUs, greedy, 1-unit blocks"
tput() {        # nodes: the config's [node] sections, 8 PUs each
	{
		printf '[run]\nunits = 200000\npolicy = greedy\npipeline = 2\n[balancer]\ngreedy_block = 1\n'
		for w in $(seq 1 "$1"); do printf '[node w%d]\nemu = z z z z z z z z\n' "$w"; done
		printf '[model z]\nclass = cpu\ncompute = poly 0\n'
	} > "$T/tput$1.ini"
}
tput 8
tput 1
for how in mpirun one; do
	for i in 1 2 3; do
		if [ $how = mpirun ]; then
			out=$(mpi -np 9 "$BUILD/plb-null" --config "$T/tput8.ini" --json | grep '^{')
		else
			out=$("$BUILD/plb-null" --config "$T/tput1.ini" --json | grep '^{')
		fi
		python3 - "$how" "$i" "$out" <<'PY'
import json, sys
how, i, d = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
label = "mpirun -np 9, 8x8 PUs" if how == "mpirun" else "one process, 8 PUs"
print("%-22s run %s: %d blocks in %.3f s: %.0f completions/s; master thread %.2f us CPU a block (%.0f/s on a core of its own)"
      % (label, i, d["blocks"], d["makespan_s"], d["blocks"] / d["makespan_s"],
         1e6 * d["master_cpu_s"] / d["blocks"], d["blocks"] / d["master_cpu_s"]))
PY
	done
done
echo
echo "== under load: a real cpu = 1 PU, a kernel that does nothing, greedy 1-unit blocks;"
echo "   idle, then beside two busy loops at nice 0 (completions/s, same sitting)"
printf '[run]\nunits = 40000\npolicy = greedy\npipeline = 2\n[balancer]\ngreedy_block = 1\n[node a]\ncpu = 1\n' >"$T/load1.ini"
{
	printf '[run]\nunits = 40000\npolicy = greedy\npipeline = 2\n[balancer]\ngreedy_block = 1\n'
	for w in $(seq 1 8); do printf '[node w%d]\ncpu = 1\n' "$w"; done
} >"$T/load8.ini"
rate() { grep '^{' | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('%.0f' % (d['blocks'] / d['makespan_s']), end=' ')"; }
load_runs() {   # load_runs LABEL: 5 runs in one process, 3 under mpirun -np 9
	printf '%-26s one process: ' "$1"
	for i in 1 2 3 4 5; do "$BUILD/plb-null" --config "$T/load1.ini" --json --quiet | rate; done
	printf '\n%-26s mpirun -np 9: ' "$1"
	for i in 1 2 3; do mpi -np 9 "$BUILD/plb-null" --config "$T/load8.ini" --json --quiet | rate; done
	echo
}
load_runs idle
hogs=()
for i in 1 2; do (while :; do :; done) & hogs+=($!); done
load_runs "two busy loops"
kill "${hogs[@]}"
echo
echo "== plbsim vs runtime (plb-null), plb-hac, device times x 0.05, seeds 1..$SEEDS"
printf '%-10s %5s %10s %10s %10s %10s\n' scenario seed sim_ratio rt_ratio rt/sim rt_span_s
for s in mm-3 grn-3 kmeans-3 mm-5; do
	python3 scripts/scale-scenario.py config/sim/$s.ini 0.05 "$T/$s.ini"
	np=$(( $(grep -c '^\[node' "$T/$s.ini") + 1 ))
	for seed in $(seq 1 "$SEEDS"); do
		sed -i "s/^seed = .*/seed = $seed/" "$T/$s.ini"
		grep -q '^seed = ' "$T/$s.ini" || sed -i "s/^\[run\]/[run]\nseed = $seed/" "$T/$s.ini"
		sim=$("$BUILD/plbsim" "$T/$s.ini" --policy plb-hac --json | jget ratio)
		rt=$(mpi -np $np "$BUILD/plb-null" --config "$T/$s.ini" --policy plb-hac --json | grep '^{')
		python3 -c "print('%-10s %5d %10.4f %10.4f %10.4f %10.2f' % ('$s', $seed, $sim, $(jget ratio <<<"$rt"), $(jget ratio <<<"$rt") / $sim, $(jget makespan_s <<<"$rt")))"
	done
done
echo
echo "== an idle worker's CPU (master holds 3 s before the run; share of one core)"
out=$(mpi -np 4 "$BUILD/plb-null" --config test/data/small.ini --hold 3 --json | grep '^{')
python3 -c "print('worker_idle_cpu %.1f%% of a core' % (100 * $(jget worker_idle_cpu <<<"$out")))"
echo
echo "== one process (in-process transport) vs mpirun -np 2, the same config (makespan, s)"
printf '%-28s %4s %10s %10s %10s\n' job run mpirun one-proc one/mpi
python3 scripts/scale-scenario.py config/sim/mm-1.ini 0.02 "$T/mm1.ini"
printf '[run]\nunits = 1\n[node a]\ncpu = 1\n' > "$T/cpu.ini"
for i in 1 2 3; do
	a=$(mpi -np 2 "$BUILD/plb-null" --config "$T/mm1.ini" --json | grep '^{' | jget makespan_s)
	b=$("$BUILD/plb-null" --config "$T/mm1.ini" --json | grep '^{' | jget makespan_s)
	python3 -c "print('%-28s %4d %10.4f %10.4f %10.4f' % ('plb-null mm-1 x0.02', $i, $a, $b, $b / $a))"
done
for i in 1 2 3; do
	a=$(mpi -np 2 "$BUILD/plb-mm" --config "$T/cpu.ini" --n 2048 --json | grep '^{' | jget makespan_s)
	b=$("$BUILD/plb-mm" --config "$T/cpu.ini" --n 2048 --json | grep '^{' | jget makespan_s)
	python3 -c "print('%-28s %4d %10.4f %10.4f %10.4f' % ('plb-mm n=2048 double, cpu=1', $i, $a, $b, $b / $a))"
done
