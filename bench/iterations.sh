#!/usr/bin/env bash
# make bench-iterations: an iterative job (the same product K times) on
# the demo cluster, config/demo.ini: per run its ratio, its training
# blocks, the PUs that started from the last run's models, and the bytes
# moved. Run 1 trains; from run 2 on the models are kept ([run]
# keep_models = 1), and the nodes keep A and B (plb-mm --runs asks for
# resident input), so later runs send a node only what it lacks. The same K runs with keep_models = 0 follow, for
# comparison. Figures are printed, not asserted.
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
done
