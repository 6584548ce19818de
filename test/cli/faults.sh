# Dead and frozen ranks under `mpirun --enable-recovery` (without it, mpirun
# ends the whole job when a rank dies): a worker killed (kill -9) or frozen
# (kill -STOP) in a run is taken out after its limit of silence (at least
# [network] peer_timeout_min_s, at most peer_timeout_s) and the run ends
# with every unit done exactly once, the report naming the rank, and a later
# run goes on without it; a frozen one that comes back stops by itself; a
# killed master is noticed by its workers, in a run and between runs, and
# they stop with a message. A worker killed or frozen after the last run,
# before plb_finalize, is noticed there: every rank ends, without
# MPI_Finalize (whose fence would wait for it). A frozen rank does not
# hold mpirun: a live rank on its host ends it in plb_finalize, and the
# master ends the job with MPI_Abort at its exit ([network] end_lost, the
# default; Open MPI 4.1 under --enable-recovery ended the job on the
# abort alone in most runs, not all); with end_lost = 0 the frozen rank
# holds it until it comes back, and then stops by itself. A PU stuck in
# its kernel does not hold its rank at the end. Nothing is left running.
. "$(dirname "$0")/lib.bash"
BUILD=${BUILD:-build}
need_mpi
cat >"$TMP/f.ini" <<'INI'
[run]
units = 1600000
pipeline = 2
[network]
peer_timeout_s = 2
[node a]
emu = e e
[node b]
emu = e e
[model e]
class = gpu
compute = poly 0.002 1e-5
INI
sed 's/^peer_timeout_s = 2$/&\nend_lost = 0/' "$TMP/f.ini" >"$TMP/wait.ini"
# rank_pid PID RANK: that MPI rank among PID's descendants
rank_pid() {
	local c
	for c in $(pgrep -P "$1"); do
		tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$c"
		rank_pid "$c" "$2"
	done
}
# start [ARGS]: the job in the background (a 4 s run), $job its pid, and
# the pids of ranks 0, 1 and 2 once they are there; returns 1.5 s after
# the master said that every worker joined (PLB_LOG=info), i.e. in the
# run (or in --hold): a rank stopped or killed in MPI_Init holds up
# every rank there, which is Open MPI's to time out, not plb's (under
# ThreadSanitizer MPI_Init takes seconds)
start() {
	PLB_LOG=info timeout 90 mpirun --oversubscribe --bind-to none --enable-recovery -np 3 -x PLB_LOG \
		"$BUILD/plb-null" --config "$TMP/f.ini" "$@" >"$TMP/out" 2>"$TMP/err" &
	job=$!
	for _ in $(seq 600); do
		r0=$(rank_pid $job 0) r1=$(rank_pid $job 1) r2=$(rank_pid $job 2)
		[ -n "$r0" ] && [ -n "$r1" ] && [ -n "$r2" ] && joined "$TMP/err" && break
		sleep 0.1
	done
	sleep 1.5       # into the run
}
# ends WHAT S: the job ends within S seconds, with no rank left
ends() {
	local t=0
	while kill -0 $job 2>/dev/null && [ $t -lt $(($2 * 10)) ]; do sleep 0.1; t=$((t + 1)); done
	check "$1: the job ends within $2 s (waited $((t / 10)) s)" eval '! kill -0 $job 2>/dev/null'
	if kill -0 $job 2>/dev/null; then       # what holds it, for the log
		ps -o pid,ppid,stat,wchan:20,etime,args --ppid "$(pgrep -P $job | head -1)" -p "$job $r0 $r1 $r2" 2>&1 | sed 's/^/  /'
		tail -5 "$TMP/err" | sed 's/^/  err: /'
	fi
	pkill -9 -P $job 2>/dev/null        # mpirun, should it be there still
	kill -9 $job 2>/dev/null
	wait $job 2>/dev/null
	check "$1: no rank left running" eval '! running $r0 && ! running $r1 && ! running $r2'
	kill -9 $r0 $r1 $r2 2>/dev/null     # (a failed check leaves nothing behind)
}
# running PID: the process is there and not a zombie (a rank that mpirun's
# abort ended is left unreaped when mpirun exits before it)
running() {
	kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]
}
run_ok() {      # run_ok WHAT: the master's report: every unit once, rank 2 lost
	check "$1: every unit done once" grep -q "1600000 of 1600000 done, coverage ok" "$TMP/out"
	check "$1: the report names the rank" grep -q "ranks lost     1: rank 2 on .* at [0-9.]* s" "$TMP/out"
	check "$1: the log says why" taken_out "$TMP/err" 2 ".*" 1 2
}

# two runs: the second goes on without the rank lost in the first
start --runs 2
kill -9 "$r2"
ends "a worker killed" 30
check "a worker killed: the log says why" taken_out "$TMP/err" 2 ".*" 1 2
check "a worker killed: the second run done without it" grep -q "1600000 of 1600000 done, coverage ok" "$TMP/out"
check "a worker killed: ... its PUs out of it" grep -q "PUs lost       2" "$TMP/out"

# a worker frozen: the job ends by itself, the frozen rank with it
start
kill -STOP "$r2"
ends "a worker frozen" 30
run_ok "a worker frozen"
check "a worker frozen: the master ends the job" grep -q "the master ends it with MPI_Abort" "$TMP/err"
check "a worker frozen: a rank on its host ends it" grep -q "process $r2 on this host, a rank taken out of the job, ended" "$TMP/err"

# with end_lost = 0 it holds mpirun until it comes back, then stops
start --config "$TMP/wait.ini"
kill -STOP "$r2"
for _ in $(seq 300); do kill -0 "$r0" 2>/dev/null || break; sleep 0.1; done
check "a worker frozen, end_lost = 0: the master ends without it" eval '! kill -0 $r0 2>/dev/null'
check "... and mpirun waits for it" eval 'kill -0 $job 2>/dev/null'
kill -CONT "$r2"
ends "a worker frozen, end_lost = 0, then back" 15
run_ok "a worker frozen, end_lost = 0"
check "a worker frozen, end_lost = 0: back, it stops with a message" grep -q "\[2@.*worker: error: .*this worker stops" "$TMP/err"
check "a worker frozen, end_lost = 0: no MPI_Abort" eval '! grep -q "ends it with MPI_Abort" "$TMP/err"'
check "a worker frozen, end_lost = 0: no rank ends it" eval '! grep -q "a rank taken out of the job, ended" "$TMP/err"'

start
kill -9 "$r0"
ends "the master killed in a run" 15
check "the master killed in a run: the workers say so" grep -q "the master (rank 0) has said nothing for [0-9.]* s in a run.*this worker stops" "$TMP/err"

start --hold 10
kill -9 "$r0"
ends "the master killed between runs" 15
check "the master killed between runs: the workers say so" grep -q "the master (rank 0, process $r0 on this host) is gone; this worker stops" "$TMP/err"
# after_report: returns once the master has printed its report
after_report() {
	for _ in $(seq 300); do grep -q "coverage ok" "$TMP/out" && break; sleep 0.1; done
}
start --linger 3
after_report
kill -9 "$r2"
ends "a worker killed after the last run" 20
check "a worker killed after the last run: the run was whole" grep -q "1600000 of 1600000 done, coverage ok" "$TMP/out"
check "a worker killed after the last run: plb_finalize says so" grep -q "rank 2 (.*) did not answer the shutdown within \[network\] peer_timeout_s = 2 s: taken as lost after the last run" "$TMP/err"

start --linger 3
after_report
kill -STOP "$r2"
ends "a worker frozen after the last run" 30
check "a worker frozen after the last run: plb_finalize says so" grep -q "rank 2 (.*) did not answer the shutdown" "$TMP/err"
check "a worker frozen after the last run: the master ends the job" grep -q "the master ends it with MPI_Abort" "$TMP/err"
check "a worker frozen after the last run: a rank on its host ends it" grep -q "process $r2 on this host, a rank taken out of the job, ended" "$TMP/err"

start --linger 3 --config "$TMP/wait.ini"
after_report
kill -STOP "$r2"
for _ in $(seq 300); do kill -0 "$r0" 2>/dev/null || break; sleep 0.1; done
check "a worker frozen after the last run, end_lost = 0: the master ends without it" eval '! kill -0 $r0 2>/dev/null'
kill -CONT "$r2"
ends "a worker frozen after the last run, end_lost = 0, then back" 20
check "a worker frozen after the last run, end_lost = 0: back, it ends with a message" grep -q "\[2@.*worker: error: the master (rank 0) has said nothing for [0-9.]* s since this worker's goodbye" "$TMP/err"
# A PU stuck in its kernel (its device 10^4 times slower from 1 s: a hung
# kernel) on a live rank: its block is run again elsewhere, the run ends
# whole, and at the end the rank does not wait for the PU's thread past
# half of peer_timeout_s, but ends with a warning.
sed -e 's/^emu = e e$/emu = e s/' -e '$a[model s]\nclass = gpu\ncompute = poly 0.002 1e-5\nchange = 1.0:10000' \
	"$TMP/f.ini" >"$TMP/stuck.ini"
start --config "$TMP/stuck.ini"
after_report
ends "a PU stuck in its kernel" 20
check "a PU stuck in its kernel: the run was whole" grep -q "1600000 of 1600000 done, coverage ok" "$TMP/out"
check "a PU stuck in its kernel: the worker says it left it" grep -q "warning: PU [0-9] (.*) is still in a block 1.0 s after it was told to stop" "$TMP/err"
# A pipeline run (plb-null on [op] sections): a worker frozen in it is
# taken out, the instances it held go to the other node, and every
# instance is done once (each counts its tasks: checked by plb-null)
cat >"$TMP/pipe.ini" <<'INI'
[run]
units = 1500
window = 4
[network]
peer_timeout_s = 2
[node a]
emu = g c
[node b]
emu = g c
[model g]
class = gpu
compute = poly 0 0.001
[model c]
class = cpu
compute = poly 0 0.001
[op R]
cpu = 10
gpu = 2
[op F]
after = R
tasks = 2
cpu = 20
gpu = 4
INI
start --config "$TMP/pipe.ini" --json
kill -STOP "$r2"
ends "a worker frozen in a pipeline run" 40
check "a worker frozen in a pipeline run: every instance done once, each its 3 tasks" \
	grep -q '"instances":1500,"instances_done":1500,"coverage_ok":true' "$TMP/out"
check "... the report names the rank" grep -q '"ranks_lost":1,"lost_note":"rank 2 on ' "$TMP/out"
check "... the log says why" grep -q "rank 2 (.*) held [0-9]* instances and said nothing for [0-9.]* s, longer than \[network\] peer_timeout_s = 2 s: taken out of the job; its instances go to the other nodes" "$TMP/err"
finish
