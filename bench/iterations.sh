#!/usr/bin/env bash
# make bench-iterations: an iterative job (the same product K times) on
# the demo cluster, config/demo.ini: per run its ratio, its training
# blocks, the PUs that started from the last run's models, and the bytes
# moved. Run 1 trains; from run 2 on the models are kept ([run]
# keep_models = 1), and the nodes keep A and B (plb-mm --runs asks for
# resident input), so later runs send a node only what it lacks. The same
# K runs with keep_models = 0 follow, for comparison. Then K processes of
# one run each with --models FILE: the first trains and saves the models,
# each later one starts warm from the file; their ratios against the
# in-process iterations' (runs 2-K of the first part). Figures are
# printed, not asserted.
set -euo pipefail
BUILD=${BUILD:-build}
RUNS=${RUNS:-10}
N=${N:-4096}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
launch=()
if [ "${MPI:-1}" != 0 ] && command -v mpirun >/dev/null; then
	launch=(timeout 900 mpirun --oversubscribe --bind-to none -np 3)
fi
for keep in 1 0; do
	sed "s/^\[run\]/[run]\nkeep_models = $keep/" config/demo.ini >"$T/demo.ini"
	echo "== ${launch[*]} $BUILD/plb-mm --config demo.ini (keep_models = $keep) --n $N --prec single --runs $RUNS --json"
	"${launch[@]}" "$BUILD/plb-mm" --config "$T/demo.ini" --n "$N" --prec single \
		--runs "$RUNS" --json >"$T/out" 2>"$T/err" || { cat "$T/err"; exit 1; }
	python3 - "$T/out" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("%4s %9s %7s %9s %5s %12s %12s" % ("run", "makespan", "ratio", "training", "warm", "MB sent", "MB back"))
for i, r in enumerate(runs, 1):
    print("%4d %8.3fs %7.3f %9d %5d %12.1f %12.1f" % (i, r["makespan_s"], r["ratio"], r["training_blocks"],
          r["warm_pus"], r["bytes_sent"] / 1e6, r["bytes_received"] / 1e6))
later = [r["ratio"] for r in runs[1:]]
if later:
    later.sort()
    print("runs 2-%d: ratio median %.3f, max %.3f; training blocks %d; bytes sent at most %.1f%% of run 1's" % (
          len(runs), later[len(later) // 2], later[-1], sum(r["training_blocks"] for r in runs[1:]),
          100 * max(r["bytes_sent"] for r in runs[1:]) / runs[0]["bytes_sent"]))
PY
	[ "$keep" = 1 ] && cp "$T/out" "$T/iter.out"
done

sed "s/^\[run\]/[run]\nkeep_models = 1/" config/demo.ini >"$T/demo.ini"
echo "== $RUNS processes: ${launch[*]} $BUILD/plb-mm --config demo.ini --n $N --prec single --models FILE --json"
: >"$T/warm.out"
for i in $(seq 1 "$RUNS"); do
	"${launch[@]}" "$BUILD/plb-mm" --config "$T/demo.ini" --n "$N" --prec single \
		--models "$T/models.txt" --json >"$T/out" 2>"$T/err" || { cat "$T/err"; exit 1; }
	grep '^{' "$T/out" >>"$T/warm.out"
done
python3 - "$T/warm.out" "$T/iter.out" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
iters = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")][1:]
print("%7s %9s %7s %9s %5s" % ("process", "makespan", "ratio", "training", "warm"))
for i, r in enumerate(runs, 1):
    print("%7d %8.3fs %7.3f %9d %5d" % (i, r["makespan_s"], r["ratio"], r["training_blocks"], r["warm_pus"]))
med = lambda v: sorted(v)[len(v) // 2]
warm = [r["ratio"] for r in runs[1:]]
if warm and iters:
    it = med([r["ratio"] for r in iters])
    print("processes 2-%d (warm from the file): ratio median %.3f, training blocks %d; in-process iterations' median %.3f: %.3fx" % (
          len(runs), med(warm), sum(r["training_blocks"] for r in runs[1:]), it, med(warm) / it))
PY
