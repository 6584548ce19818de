#!/usr/bin/env bash
# Prints the balancer parameter table of README.md from `plbsim --params`
# (test/cli/readme_params.sh checks that README's table is this one).
#   bash scripts/params-table.sh [PLBSIM]
set -euo pipefail
plbsim=${1:-${PLBSIM:-build/plbsim}}
echo "| parameter | default | range | meaning |"
echo "|---|---|---|---|"
"$plbsim" --params | sed -n '2,$p' |
	sed -E 's/^([^ ]+) +([^ ]+) +(\[[^]]*\]) +(.*)$/| \1 | \2 | \3 | \4 |/'
