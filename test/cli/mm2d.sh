# plb-mm --layout 2d under mpirun: the 2-D product with A, B and C on the
# worker nodes and the pivots moving between them. On three and on four
# nodes (a real CPU PU each, then emulated PUs of unequal speeds), in
# double and single precision, with every partitioner, Freivalds' test on
# the nodes passes and pivots crossed between the nodes; with [node]
# memory_mb below the matrices' size but above a quarter of it, every
# node stays within its memory and the product is still right; a worker
# killed in the run (under --enable-recovery) ends it with an error naming
# the rank, not a hang; --output gathers C, which is A B element by
# element (test/cli/mm2d_check.py); bad options are refused before the
# run.
. "$(dirname "$0")/lib.bash"
need_mpi
BUILD=${BUILD:-build}

cat >"$TMP/cpu3.ini" <<'INI'
[run]
units = 1
[node a]
cpu = 1
[node b]
cpu = 1
[node c]
cpu = 1
INI
for prec in double single; do
	check "3 nodes, $prec: runs" mpi_run 4 "$BUILD/plb-mm" --config "$TMP/cpu3.ini" --layout 2d \
		--n 512 --block 64 --prec $prec --verify --json
	check "3 nodes, $prec: verified on the nodes" grep -q "verify (Freivalds, 8 vectors, on the nodes): ok" "$TMP/out"
	check "3 nodes, $prec: three nodes" test "$(json_get nodes)" = 3
	check "3 nodes, $prec: pivots crossed" python3 -c "import sys; sys.exit(not $(json_get pivot_bytes) > 0)"
done

# four nodes of emulated PUs, unequal: a fast device and a core, or two
# cores; a model's compute is its time for a step on a slice of x blocks
cat >"$TMP/emu4.ini" <<'INI'
[run]
units = 1
[node a]
emu = g c
[node b]
emu = g c
[node c]
emu = c c
[node d]
emu = c c
[model g]
class = gpu
compute = poly 1e-4 1e-5
[model c]
class = cpu
compute = poly 1e-4 4e-5
INI
for part in fpm multiple-cpm single-cpm homogeneous; do
	check "4 emulated nodes, $part: runs" mpi_run 5 "$BUILD/plb-mm" --config "$TMP/emu4.ini" --layout 2d \
		--n 768 --block 64 --partitioner $part --verify --json
	check "4 emulated nodes, $part: verified" grep -q "on the nodes): ok" "$TMP/out"
	check "4 emulated nodes, $part: eight PUs" test "$(json_get pus)" = 8
done

# --output: C gathered from the four nodes' rectangles to the master,
# written column-major, against A B drawn as the nodes draw them
check "--output: runs" mpi_run 5 "$BUILD/plb-mm" --config "$TMP/emu4.ini" --layout 2d --n 128 --block 32 \
	--seed 7 --output "$TMP/c.bin"
check "--output: C is A B" python3 test/cli/mm2d_check.py "$TMP/c.bin" 128 7

# memory: 3 x 1024^2 doubles are 24 MiB; 10 MiB a node
sed 's/^\[node \(.\)\]$/&\nmemory_mb = 10/' "$TMP/emu4.ini" >"$TMP/mem.ini"
check "memory_mb: runs" mpi_run 5 "$BUILD/plb-mm" --config "$TMP/mem.ini" --layout 2d --n 1024 \
	--block 64 --verify --json
check "memory_mb: verified" grep -q "on the nodes): ok" "$TMP/out"
check "memory_mb: within it" python3 -c "import sys; sys.exit(not 6 < $(json_get memory_mb_max) <= 10)"
sed 's/^memory_mb = 10$/memory_mb = 5/' "$TMP/mem.ini" >"$TMP/small.ini"
check "memory_mb too small: refused" eval '! mpi_run 5 "$BUILD/plb-mm" --config "$TMP/small.ini" --layout 2d --n 1024 --block 64'
check "memory_mb too small: says so" grep -q "do not fit in the nodes' \[node\] memory_mb (20 MiB in all" "$TMP/out"

# a worker killed in the run: the run fails, naming the rank, and every
# rank ends (steps of 0.2 s: 16 steps, a few seconds)
cat >"$TMP/slow.ini" <<'INI'
[run]
units = 1
[network]
peer_timeout_s = 2
[node a]
emu = s
[node b]
emu = s
[model s]
class = cpu
compute = poly 0.2 0
INI
PLB_LOG=info timeout 90 mpirun --oversubscribe --bind-to none --enable-recovery -np 3 -x PLB_LOG \
	"$BUILD/plb-mm" --config "$TMP/slow.ini" --layout 2d --n 1024 --block 64 >"$TMP/out" 2>"$TMP/err" &
job=$!
for _ in $(seq 600); do grep -q "the nodes' 16 steps start" "$TMP/err" && break; sleep 0.1; done
sleep 0.5       # into the steps (3.2 s of them)
for c in $(pgrep -P $job) $(pgrep -P "$(pgrep -P $job | head -1)"); do
	tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2" && kill -9 "$c"
done
t=0
while kill -0 $job 2>/dev/null && [ $t -lt 300 ]; do sleep 0.1; t=$((t + 1)); done
check "a worker killed: the job ends" eval '! kill -0 $job 2>/dev/null'
pkill -9 -P $job 2>/dev/null
wait $job 2>/dev/null
check "a worker killed: the master says which" \
	grep -qE "rank 2 \(.*\) has said nothing for|failed on rank 1 .*no pivot from rank 2" "$TMP/err"

# bad options: before any run
check "--n not a multiple of --block: refused" eval '! "$BUILD/plb-mm" --config "$TMP/cpu3.ini" --layout 2d --n 500 --block 64 >"$TMP/out" 2>&1'
check "... says so" grep -q "not a multiple of --block 64" "$TMP/out"
check "--runs with --layout 2d: refused" eval '! "$BUILD/plb-mm" --config "$TMP/cpu3.ini" --layout 2d --n 512 --runs 2 >"$TMP/out" 2>&1'
check "... says so" grep -q "\-\-runs: not with --layout 2d" "$TMP/out"
check "--layout 3d: refused" eval '! "$BUILD/plb-mm" --config "$TMP/cpu3.ini" --layout 3d --n 512 >"$TMP/out" 2>&1'
check "... says what is accepted" grep -q "1d or 2d" "$TMP/out"
finish
