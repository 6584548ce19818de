#!/usr/bin/env bash
# make demo: the paper's five-machine cluster (matrix multiply curves) under
# every policy, in the simulator, with the comparison table; then PLB-HAC's
# full report for the same run.
set -euo pipefail
plbsim=${1:-build/plbsim}
scenario=config/sim/mm-5.ini
echo "== plbsim $scenario --policy all   (virtual time; ratio = makespan / lower bound)"
"$plbsim" "$scenario" --policy all
echo
echo "== plbsim $scenario --policy plb-hac"
"$plbsim" "$scenario" --policy plb-hac
