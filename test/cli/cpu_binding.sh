# A CPU PU's team keeps to the cores its process may run on (the binding
# mpirun's --bind-to, a batch system's cpuset or taskset gives it): under
# taskset to one core, every thread of the process stays on that core,
# `cpu = all` is a team of one, with a warning where the node has more
# cores, and `cpu = 2` is an error that says why.
# (Before, the team was bound to cores 0..n-1 of the machine, outside the
# binding, and two ranks on one host each took core 0.)
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
command -v taskset >/dev/null || { echo "FAIL: no taskset (util-linux)"; exit 1; }
# the last core this process may use: not core 0, where the old binding went
core=$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | tail -1 | sed 's/.*-//')
cfg() {
	printf '[run]\nunits = 100000\n[node a]\ncpu = %s\n' "$1" >"$TMP/c.ini"
}

cfg all
taskset -c "$core" "$BUILD/plb-null" --config "$TMP/c.ini" --linger 3 --json >"$TMP/out" 2>"$TMP/err" &
pid=$!
for _ in $(seq 100); do grep -q '"coverage_ok"' "$TMP/out" && break; sleep 0.1; done
threads=0 off=""
for s in /proc/$pid/task/*/status; do
	a=$(sed -n 's/^Cpus_allowed_list:\s*//p' "$s" 2>/dev/null) || continue
	[ -n "$a" ] || continue
	threads=$((threads + 1))
	[ "$a" = "$core" ] || off="$off $a"
done
wait $pid
rc=$?
check "cpu = all under taskset -c $core: exit 0 (got $rc)" [ $rc -eq 0 ]
check "cpu = all under taskset -c $core: the run covered every unit" grep -q '"coverage_ok": *true' "$TMP/out"
check "cpu = all under taskset -c $core: threads seen in the run" [ $threads -ge 2 ]
check "cpu = all under taskset -c $core: every thread on core $core (others:$off)" [ -z "$off" ]
# cores (not hardware threads) this shell may run on
ncores=$(python3 -c 'import os, subprocess
core = dict(l.split(",") for l in subprocess.run(["lscpu", "-p=CPU,CORE"], capture_output=True,
            text=True).stdout.splitlines() if l and l[0] != "#")
print(len({core.get(str(c), c) for c in os.sched_getaffinity(0)}))')
[ "$ncores" -gt 1 ] && check "cpu = all under taskset -c $core: a warning names the binding" \
	grep -q "warning: cpu = all: this process may run on 1 of its node's [0-9]* cores (its binding" "$TMP/err"

cfg 2
taskset -c "$core" "$BUILD/plb-null" --config "$TMP/c.ini" >"$TMP/out" 2>"$TMP/err"
rc=$?
check "cpu = 2 under taskset -c $core: exit 1 (got $rc)" [ $rc -eq 1 ]
check "cpu = 2 under taskset -c $core: the error says why" \
	grep -q "c.ini.*cpu = 2: this process may run on 1 cores (its binding: .*taskset); accepted: all, or 1 to 1" "$TMP/err"
finish
