#!/usr/bin/env bash
# The device check: the first thing to run on a machine with a CUDA GPU
# that is lent for minutes (no MPI, no BLAS, no package registry there).
# docs/TESTING.md ("The device check") says how to use it.
#
# Here (a machine with nvcc, no GPU needed):
#   scripts/device-check.sh --prepare
# builds plb without MPI (CUDA objects included), copies the programs and
# the libraries they need beyond the C and CUDA runtimes into .devcheck/
# (git-ignored; carry it), then runs the check as a dry run: up to the
# first GPU call. There, from the project's root:
#   scripts/device-check.sh --out DIR
# runs the stages below in order, each under its own time limit and all
# within --budget seconds, writing as it goes into DIR:
#   device-check.txt    everything the stages print
#   device-check.json   one JSON object a line: each stage's result, and
#                       each figure as it is measured
#   summary.txt         the stages' results so far, rewritten after each
# A second run with --again repeats only the stages that did not pass in
# the last run on that machine (or name them: --only a,b).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD

# name limit_s what: most important first, the slowest last
STAGES=(
	"kit      15 the prebuilt programs match these sources and find their libraries; a CPU run"
	"gpu      30 the GPU, its driver, and what it can do at best (bench/cuda_limits)"
	"tests    40 the GPU test cases of each kernel (PLB_REQUIRE_GPU=1) and the cuda class end to end (test/cli/cuda_runtime.sh, each app with gpu = 0 verified)"
	"kernels  40 each app's CUDA kernel against its CPU kernel at two sizes, beside the device's limits (bench/gpu_kernels)"
	"apps     60 plb-bs, plb-kmeans and plb-grn with cpu = all, with gpu = 0, and with both; plb-mm --layout 2d on gpu = 0 and both"
	"opencl   20 the opencl class on the GPU through NVIDIA's OpenCL driver, where the machine has one: each app verified on opencl = 0 (test/cli/opencl_runtime.sh)"
	"gemm     90 bench/gpu.sh: plb-mm against cuBLAS at n = 4096 and 16384, single and double, gpu, cpu and both"
)
# The libraries a machine with CUDA has: the C runtime and CUDA's own
# (which must match its driver); the others travel in .devcheck.
BASE_LIBS='^(linux-vdso|libc|libm|libmvec|libpthread|libdl|librt|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|ld-linux[^ ]*)\.so'
export BASE_LIBS
stage_names() { for s in "${STAGES[@]}"; do echo "${s%% *}"; done; }

usage() {
	cat <<EOF
usage: scripts/device-check.sh [--prepare [--build DIR]] [--dry-run] [--out DIR]
                               [--only STAGE[,STAGE...] | --again] [--budget S] [--list]
  --prepare     here: build with MPI=0 in DIR (default build-nompi), pack the
                programs and their libraries into .devcheck/, then a dry run
  --dry-run     run the stages up to the first GPU call, then stop, saying so
  --out DIR     where the results go (default: \$OUT if set, else device-check-out)
  --only LIST   only these stages (comma-separated; see --list)
  --again       only the stages that did not pass in the last run here
  --budget S    the whole run's limit in seconds (default 290)
  --list        the stages, their limits and what each does
EOF
}

prepare=0 dry=0 build=build-nompi out=${OUT:-device-check-out} only="" again=0 budget=290
DC=${DEVCHECK_DIR:-.devcheck}
case $DC in /*) ;; *) DC=$ROOT/$DC ;; esac
while [ $# -gt 0 ]; do
	case $1 in
	--prepare) prepare=1 ;;
	--dry-run) dry=1 ;;
	--build) build=${2:?--build needs a directory}; shift ;;
	--out) out=${2:?--out needs a directory}; shift ;;
	--only) only=${2:?--only needs stage names}; shift ;;
	--again) again=1 ;;
	--budget) budget=${2:?--budget needs seconds}; shift ;;
	--list)
		printf '%-8s %6s  %s\n' stage limit what
		for s in "${STAGES[@]}"; do
			read -r n l w <<<"$s"
			printf '%-8s %5ss  %s\n' "$n" "$l" "$w"
		done
		exit 0 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "device-check: unknown option $1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
case $budget in
''|*[!0-9]*) echo "device-check: --budget $budget: accepted: whole seconds, 30 or more" >&2; exit 2 ;;
esac
[ "$budget" -ge 30 ] || { echo "device-check: --budget $budget: accepted: whole seconds, 30 or more" >&2; exit 2; }
if [ -n "$only" ] && [ "$again" = 1 ]; then
	echo "device-check: --only and --again: accepted: one of them" >&2
	exit 2
fi
for s in ${only//,/ }; do
	stage_names | grep -qx "$s" || {
		echo "device-check: --only $only: no stage $s; accepted: $(stage_names | tr '\n' ' ')" >&2
		exit 2
	}
done

# A hash of the sources the programs are built from: the prebuilt tree
# records it, and the check compares it with the tree it runs in (no git
# needed there).
src_hash() {
	find include balancer runtime kernels apps bench test/unit -type f \
		\( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cpp' \) -print0 2>/dev/null |
		sort -z | xargs -0 cat Makefile | sha1sum | cut -c1-16
}

# ---- here: build and pack ----
if [ "$prepare" = 1 ]; then
	set -e
	if [ -x "$build/plb-mm" ] && ldd "$build/plb-mm" | grep -q libmpi; then
		echo "device-check: --build $build holds an MPI build: the device machine has no MPI; accepted: a build directory made with MPI=0 (default build-nompi)" >&2
		exit 1
	fi
	echo "== building with MPI=0 in $build (CUDA objects included)"
	make -s MPI=0 BUILD="$build" all
	if ! [ -x "$build/bench/cuda_limits" ]; then
		echo "device-check: $build has no CUDA (no $build/bench/cuda_limits): the device check needs nvcc and cuBLAS here (see make's warning)" >&2
		exit 1
	fi
	rm -rf "$DC"
	mkdir -p "$DC/build/bench" "$DC/build/test" "$DC/lib"
	progs=("$build"/plb-* "$build/plbsim" "$build/bench/cuda_limits" "$build/bench/gpu_kernels"
	       "$build/bench/cublas_mm" "$build/test/test_mm" "$build/test/test_bs"
	       "$build/test/test_kmeans" "$build/test/test_grn")
	# plb-nuclei's device operations, where OpenCV was found here
	[ -x "$build/test/test_nuclei" ] && progs+=("$build/test/test_nuclei")
	for p in "${progs[@]}"; do
		rel=${p#"$build"/}
		cp "$p" "$DC/build/$rel"
		strip --strip-debug "$DC/build/$rel"
	done
	# every library beyond the C library and CUDA's (the device machine
	# has those, CUDA's matching its driver), under the name the
	# programs ask for
	for p in "${progs[@]}"; do ldd "$p"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
		grep -Ev "$BASE_LIBS" |
		while read -r name path; do cp -L "$path" "$DC/lib/$name"; done
	tar -C "$DC" -czf "$DC/lib.tar.gz" lib
	rm -rf "${DC:?}/lib"
	{
		echo "sources $(src_hash)"
		echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with changes)')"
		echo "built $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n)"
		nvcc=$(sh scripts/cuda-probe.sh "${CC:-cc}" | cut -d' ' -f1)
		echo "nvcc $("$nvcc" --version | tail -1)"
	} >"$DC/stamp"
	size=$(du -sb "$DC" | cut -f1)
	tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
	echo "== packed $DC: $((size / 1048576)) MiB (the tracked tree: $((tree / 1048576)) MiB; 64 MiB travel at most)"
	if [ $((size + tree)) -gt $((60 * 1048576)) ]; then
		echo "device-check: $DC and the tree are $(((size + tree) / 1048576)) MiB: over the 60 MiB kept under the limit" >&2
		exit 1
	fi
	set +e
	dry=1
fi

# ---- the check ----
if ! [ -f "$DC/stamp" ] || ! [ -f "$DC/lib.tar.gz" ]; then
	echo "device-check: no prebuilt tree in $DC: run scripts/device-check.sh --prepare where nvcc is, and carry $DC" >&2
	exit 1
fi
# unpacked beside the pack, not in it: what is carried stays small
LIBS=$DC.lib
if ! [ -d "$LIBS/lib" ] || [ "$DC/lib.tar.gz" -nt "$LIBS/lib" ]; then
	rm -rf "$LIBS" && mkdir -p "$LIBS" && tar -C "$LIBS" -xzf "$DC/lib.tar.gz" ||
		{ echo "device-check: cannot unpack $DC/lib.tar.gz into $LIBS" >&2; exit 1; }
fi
export LD_LIBRARY_PATH="$LIBS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
	[ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
export BUILD="$DC/build" PLBSIM="$DC/build/plbsim" HAVE_CUDA=1 MPI=0 PLB_REQUIRE_GPU=1
export PYTHONUNBUFFERED=1
mkdir -p "$out" || { echo "device-check: --out $out: cannot make it" >&2; exit 2; }
TXT="$out/device-check.txt" JSON="$out/device-check.json" SUMMARY="$out/summary.txt"
LIMITS="$out/limits.txt"
STATE="$DC.state"
: >"$TXT"
: >"$JSON"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
rm -f "$LIMITS"
OUTDIR=$out
export TXT JSON T DC LIMITS ROOT LIBS OUTDIR

# which stages run
want=()
if [ -n "$only" ]; then
	for n in $(stage_names); do [[ ",$only," == *",$n,"* ]] && want+=("$n"); done
elif [ "$again" = 1 ] && [ -f "$STATE" ]; then
	for n in $(stage_names); do grep -qx "$n ok" "$STATE" || want+=("$n"); done
	[ ${#want[@]} -gt 0 ] || { echo "device-check: every stage passed in the last run here; nothing to run again"; exit 0; }
else
	mapfile -t want < <(stage_names)
fi

# The first GPU call of a stage goes through here: a dry run stops there.
gpu_gate() {
	if [ "${DRY:-0}" = 1 ]; then
		echo "dry run: stopping before the first GPU call: $*"
		exit 99
	fi
}
# emit KEY=VALUE...: one JSON object (values as JSON where they parse) on JSON
emit() {
	python3 - "$@" >>"$JSON" <<'PY'
import json, sys
o = {}
for kv in sys.argv[1:]:
    k, v = kv.split("=", 1)
    try:
        o[k] = json.loads(v)
    except ValueError:
        o[k] = v
print(json.dumps(o))
PY
}
export DRY=$dry
export -f gpu_gate emit

stage_kit() {
	echo "prebuilt: $(tr '\n' ';' <"$DC/stamp")"
	local have want_h
	have=$(sed -n 's/^sources //p' "$DC/stamp")
	want_h=$(src_hash)
	if [ "$have" != "$want_h" ]; then
		echo "FAIL: the prebuilt programs are of other sources ($have, these are $want_h): run --prepare again where they were built"
		return 1
	fi
	local bad=0 p
	for p in "$DC"/build/plb-* "$DC"/build/plbsim "$DC"/build/bench/* "$DC"/build/test/*; do
		if ldd "$p" | grep -q 'not found'; then
			echo "FAIL: $p: $(ldd "$p" | grep 'not found' | tr -s ' \t\n' ' ')"
			bad=1
		fi
	done
	[ $bad = 0 ] || return 1
	# found here, but outside the pack and the base: missing there
	local extra
	extra=$(for p in "$DC"/build/plb-* "$DC"/build/plbsim "$DC"/build/bench/* "$DC"/build/test/*; do ldd "$p"; done |
		awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | grep -Ev "$BASE_LIBS" | grep -v " $LIBS/lib/")
	if [ -n "$extra" ]; then
		echo "FAIL: libraries from this machine that are not in $LIBS/lib: $(echo "$extra" | tr '\n' ' ')"
		return 1
	fi
	echo "every program finds its libraries in $LIBS/lib or the C and CUDA runtimes"
	printf '[run]\nunits = 1\n[node a]\ncpu = 1\n' >"$T/cpu1.ini"
	"$DC/build/plb-mm" --config "$T/cpu1.ini" --n 300 --verify --json >"$T/o" 2>&1 || { cat "$T/o"; return 1; }
	grep -q 'verify.*: ok' "$T/o" || { cat "$T/o"; return 1; }
	echo "plb-mm --n 300 on one core: verified"
	"$DC/build/plbsim" config/sim/mm-1.ini --policy plb-hac >"$T/o" 2>&1 || { cat "$T/o"; return 1; }
	grep -q 'coverage ok' "$T/o" || { cat "$T/o"; return 1; }
	echo "plbsim config/sim/mm-1.ini: coverage ok"
}
export -f src_hash

stage_gpu() {
	gpu_gate "nvidia-smi"
	nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv 2>&1
	echo "cpu: $(nproc) logical processors, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
	"$DC/build/bench/cuda_limits" | tee "$T/limits" || return 1
	cp "$T/limits" "$LIMITS"
	python3 - "$T/limits" >>"$JSON" <<'PY'
import json, sys
o = {"figure": "limits"}
for line in open(sys.argv[1]):
    k, v = line.split(None, 1)
    v = v.strip()
    try:
        o[k] = float(v)
    except ValueError:
        o[k] = v
print(json.dumps(o))
PY
}

stage_tests() {
	gpu_gate "$DC/build/test/test_mm"
	local rc=0 t
	for t in test_mm test_bs test_kmeans test_grn test_nuclei; do
		[ "$t" = test_nuclei ] && [ ! -x "$DC/build/test/$t" ] && continue
		if "$DC/build/test/$t" >"$T/o" 2>&1; then
			echo "$t: $(grep -c '^\[       OK \]' "$T/o") passed"
			emit figure=test name=$t result=ok
		else
			cat "$T/o"
			emit figure=test name=$t result=failed
			rc=1
		fi
	done
	if bash test/cli/cuda_runtime.sh >"$T/o" 2>&1; then
		echo "test/cli/cuda_runtime.sh: ok"
		emit figure=test name=cuda_runtime result=ok
	else
		cat "$T/o"
		emit figure=test name=cuda_runtime result=failed
		rc=1
	fi
	# every app's cuda class through the runtime, verified
	printf '[run]\nunits = 1\n[node a]\ngpu = 0\n' >"$T/gpu.ini"
	local app args
	for app in "bs --n 1000003 --prec single" "bs --n 300007 --prec double" \
		   "kmeans --n 200003 --d 8 --k 10 --iters 3" "grn --genes 80 --samples 150 --size 2" \
		   "null"; do
		read -r -a args <<<"$app"
		if [ "${args[0]}" = null ]; then
			timeout 60 "$DC/build/plb-null" --config "$T/gpu.ini" --json >"$T/o" 2>&1
		else
			timeout 60 "$DC/build/plb-${args[0]}" --config "$T/gpu.ini" "${args[@]:1}" --verify --json >"$T/o" 2>&1
		fi
		local r=$?
		if [ $r = 0 ] && { [ "${args[0]}" = null ] || grep -qi 'verif.*ok' "$T/o"; } && grep -q '"coverage_ok": *true' "$T/o"; then
			echo "plb-$app on gpu = 0: verified"
			emit figure=test name="plb-$app gpu" result=ok
		else
			cat "$T/o"
			emit figure=test name="plb-$app gpu" result=failed
			rc=1
		fi
	done
	return $rc
}

stage_opencl() {
	if ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
		echo "no OpenCL driver on this machine (/etc/OpenCL/vendors is empty): nothing to run"
		emit figure=test name=opencl_runtime result=skipped
		return 0
	fi
	gpu_gate "$DC/build/test/test_bs (its OpenCL case)"
	local rc=0 t
	for t in test_bs test_grn test_nuclei; do
		[ "$t" = test_nuclei ] && [ ! -x "$DC/build/test/$t" ] && continue
		if PLB_REQUIRE_OPENCL=1 "$DC/build/test/$t" >"$T/o" 2>&1; then
			echo "$t (CUDA and OpenCL cases): ok"
		else
			cat "$T/o"
			rc=1
		fi
	done
	if HAVE_OPENCL=1 bash test/cli/opencl_runtime.sh >"$T/o" 2>&1; then
		echo "test/cli/opencl_runtime.sh: ok (device 0: $(grep -h -m1 . /etc/OpenCL/vendors/*.icd | head -n 1))"
		emit figure=test name=opencl_runtime result=ok
	else
		cat "$T/o"
		emit figure=test name=opencl_runtime result=failed
		rc=1
	fi
	return $rc
}

stage_kernels() {
	gpu_gate "$DC/build/bench/gpu_kernels"
	local limits=()
	[ -f "$LIMITS" ] && limits=(--limits "$LIMITS")
	OPENBLAS_NUM_THREADS=1 "$DC/build/bench/gpu_kernels" "${limits[@]}" --json "$T/k.json" --reps 5
	local rc=$?
	sed 's/^{/{"figure": "kernel", /' "$T/k.json" >>"$JSON" 2>/dev/null
	return $rc
}

# app_runs APP ARGS...: the app on gpu = 0, cpu = all and both, each twice
# with one models file per config (the second run warm); the warm
# makespans, both against the sum of the solo throughputs and the GPU's;
# then the same node in plbsim from the warm run's models (--from-models,
# --runs 2): how far the simulator is from the real node. The models
# files and the scenario go to the output folder (sim_bridge).
app_runs() {
	local app=$1; shift
	local c i
	printf '[run]\nunits = 1\n[node a]\ngpu = 0\n' >"$T/a-gpu.ini"
	printf '[run]\nunits = 1\n[node a]\ncpu = all\n' >"$T/a-cpu.ini"
	printf '[run]\nunits = 1\n[node a]\ncpu = all\ngpu = 0\n' >"$T/a-both.ini"
	for c in gpu cpu both; do
		rm -f "$T/m-$app-$c"
		for i in 1 2; do
			"$DC/build/plb-$app" --config "$T/a-$c.ini" "$@" --models "$T/m-$app-$c" --json \
				>"$T/r-$app-$c-$i" 2>"$T/e" || { cat "$T/e"; return 1; }
		done
	done
	python3 - "$app" "$T" "$*" <<'PY' | tee -a "$T/apps.txt"
import json, sys
app, T, args = sys.argv[1:]
def span(c):
    lines = [json.loads(l) for l in open(f"{T}/r-{app}-{c}-2") if l.startswith("{")]
    return sum(r["makespan_s"] for r in lines)    # kmeans: one report an iteration
g, c, b = span("gpu"), span("cpu"), span("both")
s = 1 / g + 1 / c
print(f"plb-{app} {args}: warm makespans gpu {g:.4f} s, cpu {c:.4f} s, both {b:.4f} s: "
      f"both/sum {1 / b / s:.3f}, both/gpu {(1 / b) / (1 / g):.3f}")
with open(f"{T}/apps.json", "a") as f:
    f.write(json.dumps({"figure": "app", "app": app, "args": args, "gpu_s": g, "cpu_s": c,
                        "both_s": b, "both_over_sum": 1 / b / s, "both_over_gpu": g / b}) + "\n")
PY
	sim_bridge "$app" || echo "plb-$app: the plbsim bridge failed (above); the app's figures stand"
}

# sim_bridge APP: the warm both-run's models as a plbsim scenario, run warm
sim_bridge() {
	local app=$1 c units
	for c in gpu cpu both; do cp "$T/m-$app-$c" "$OUTDIR/models-$app-$c.txt" 2>/dev/null; done
	units=$(python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')][-1]['units'])" \
		"$T/r-$app-both-2") || return 1
	"$DC/build/plbsim" "$T/a-both.ini" --from-models "$T/m-$app-both" --units "$units" \
		>"$OUTDIR/sim-$app.ini" 2>"$T/e" || { cat "$T/e"; return 1; }
	"$DC/build/plbsim" "$OUTDIR/sim-$app.ini" --policy plb-hac --runs 2 --json >"$T/s-$app" 2>"$T/e" ||
		{ cat "$T/e"; return 1; }
	python3 - "$app" "$T" <<'PY' | tee -a "$T/apps.txt"
import json, sys
app, T = sys.argv[1:]
sim = json.load(open(f"{T}/s-{app}"))
real = [json.loads(l) for l in open(f"{T}/r-{app}-both-2") if l.startswith("{")][-1]
print(f"plb-{app} both in plbsim from its models: {sim['makespan_s']:.4f} s against the real "
      f"{real['makespan_s']:.4f} s (its last report), sim/real {sim['makespan_s'] / real['makespan_s']:.3f}")
with open(f"{T}/apps.json", "a") as f:
    f.write(json.dumps({"figure": "sim_bridge", "app": app, "sim_s": sim["makespan_s"],
                        "real_s": real["makespan_s"], "sim_ratio": sim["ratio"]}) + "\n")
PY
}
export -f app_runs sim_bridge

stage_apps() {
	gpu_gate "$DC/build/plb-bs on gpu = 0"
	local rc=0
	app_runs bs --n "${BS_N:-200000000}" --prec single || rc=1
	app_runs kmeans --n "${KM_N:-4000000}" --d 32 --k 64 --iters 4 --tol 0 || rc=1
	app_runs grn --genes "${GRN_GENES:-1000}" --samples 200 --size 2 || rc=1
	mm2d_runs || rc=1
	cat "$T/apps.json" >>"$JSON" 2>/dev/null
	return $rc
}

# plb-mm --layout 2d on gpu = 0 and on cpu = all with gpu = 0: the cuda
# class of the 2-D step (C kept on the device), verified on the node
mm2d_runs() {
	local c
	for c in gpu both; do
		"$DC/build/plb-mm" --config "$T/a-$c.ini" --n "${MM2D_N:-8192}" --prec single --layout 2d --verify \
			--json >"$T/r-mm2d-$c" 2>"$T/e" || { cat "$T/e"; return 1; }
		grep -q "on the nodes): ok" "$T/e" || { cat "$T/e"; return 1; }
		grep '^{' "$T/r-mm2d-$c" | tail -1 | sed "s/^{/{\"figure\": \"mm2d\", \"config\": \"$c\", /" >>"$T/apps.json"
		echo "plb-mm --layout 2d on $c: $(grep '^{' "$T/r-mm2d-$c" | tail -1)" | tee -a "$T/apps.txt"
	done
}

stage_gemm() {
	gpu_gate "$DC/build/bench/cublas_mm"
	NS="4096 16384" PRECS="single double" RUNS=2 bash bench/gpu.sh | tee "$T/gemm.txt"
	local rc=${PIPESTATUS[0]}
	awk '$1 == "single" || $1 == "double"' "$T/gemm.txt" | while read -r p n cb cp _ gcold gpu cpu both sum _ r1 r2; do
		emit figure=gemm prec="$p" n="$n" cublas_gflops="$cb" cublas_copies_gflops="$cp" \
			plb_gpu_cold="$gcold" plb_gpu="$gpu" plb_cpu="$cpu" plb_both="$both" sum="$sum" \
			gpu_over_copies="$r1" both_over_sum="$r2"
	done
	return "$rc"
}
export -f stage_kit stage_gpu stage_tests stage_kernels stage_apps stage_opencl stage_gemm mm2d_runs

summary() {
	{
		echo "device check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n); prebuilt: $(sed -n 's/^commit //p' "$DC/stamp")"
		cat "$T/results"
		[ -n "${1:-}" ] && echo "$1"
	} >"$SUMMARY"
}
: >"$T/results"
start=$(date +%s)
deadline=$((start + budget))
stopped=""
for name in "${want[@]}"; do
	lim=$(for s in "${STAGES[@]}"; do read -r n l _ <<<"$s"; [ "$n" = "$name" ] && echo "$l"; done)
	left=$((deadline - $(date +%s)))
	if [ -n "$stopped" ] || [ "$left" -lt 5 ]; then
		why=${stopped:-"no time left in --budget $budget"}
		printf '%-8s %-8s %6s  %s\n' "$name" skipped - "$why" >>"$T/results"
		emit stage="$name" result=skipped why="$why"
		continue
	fi
	[ "$lim" -gt "$left" ] && lim=$left
	echo "== stage $name (limit ${lim} s)" | tee -a "$TXT"
	t0=$(date +%s.%N)
	timeout -k 5 "$lim" bash -c "stage_$name" 2>&1 | tee -a "$TXT"
	rc=${PIPESTATUS[0]}
	dt=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
	case $rc in
	0) res=ok ;;
	99) res=dry; stopped="the dry run stopped before $name's first GPU call" ;;
	124|137) res=timeout ;;
	*) res=failed ;;
	esac
	printf '%-8s %-8s %6s\n' "$name" "$res" "$dt" >>"$T/results"
	emit stage="$name" result="$res" seconds="$dt" limit_s="$lim"
	if [ "$dry" = 0 ]; then
		{ grep -v "^$name " "$STATE" 2>/dev/null; echo "$name $res"; } >"$T/state"
		cp "$T/state" "$STATE"
	fi
	summary
done
failed=$(awk '$2 != "ok" && $2 != "dry" && $2 != "skipped"' "$T/results" | wc -l)
again=""
[ "$failed" -gt 0 ] && again="again: scripts/device-check.sh --again (or --only $(awk '$2 != "ok" && $2 != "dry" && $2 != "skipped" {print $1}' "$T/results" | paste -sd,))"
summary "$again"
echo
echo "== summary ($SUMMARY)"
cat "$SUMMARY"
[ "$dry" = 1 ] && grep -q ' dry ' "$T/results" && echo "dry run: every stage up to the first GPU call ran; the rest needs a GPU"
[ "$failed" -eq 0 ]
