#!/usr/bin/env bash
# make bench-mm2d: plb-mm's 2-D product (--layout 2d: A, B and C on the
# worker nodes, pivots between them) against its 1-D product (A to every
# node, B's columns out and C's back through the master), for real, on
# five emulated hosts (scripts/netns-hosts.sh: network namespaces on a
# bridge, TCP between them; needs root): the master alone on the first,
# a worker node on each other, each worker's link shaped with tc (tbf)
# to RATE (default 1gbit) both ways and given as its [node] link_gbps.
# Two nodes have a fast emulated device and a core, two have two cores;
# the models are the same speeds for both layouts (a 2-D step on x
# blocks of b x b, a 1-D column of n elements: n^2 / b^3 such blocks).
# Emulated PUs run the real kernel too (single precision, to fit this
# machine's cores) and wait out their models. For each N of NS (default
# "4096 8192"): the 2-D product's time, its bound (the equal-time split
# over the PUs' measured steps plus the pivots a node must receive over
# its link) and ratio, the bytes its pivots moved, and every partitioner;
# the 1-D product's makespan and the bytes through the master. Figures
# only: this machine is shared.
set -euo pipefail
BUILD=${BUILD:-build}
RATE=${RATE:-1gbit}
NS_LIST=${NS:-4096 8192}
B=128
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
H=$PWD/scripts/netns-hosts.sh
if ! bash "$H" check || ! command -v tc >/dev/null; then
	echo "bench-mm2d: no network namespaces or no tc here (needs root and iproute2)" >&2
	exit 1
fi
T=$(mktemp -d)
P=plbm$$x
trap '"$H" down $P; rm -rf "$T"' EXIT
"$H" up $P 5
printf '%s1 slots=1\n%s2 slots=1\n%s3 slots=1\n%s4 slots=1\n%s5 slots=1\n' $P $P $P $P $P >"$T/hosts"
for i in 2 3 4 5; do
	ip netns exec ${P}$i tc qdisc replace dev eth0 root tbf rate "$RATE" burst 512kb latency 100ms
	ip netns exec ${P}br tc qdisc replace dev b$i root tbf rate "$RATE" burst 512kb latency 100ms
done
g=$(python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)(g|m)bit', sys.argv[1]); print(float(m[1]) * (1 if m[2] == 'g' else 1e-3))" "$RATE")
# config (SCALE set): the cluster, its models' times SCALE times a 2-D block's
config() {
	printf '[run]\nunits = 1\n'
	local i=2 node
	for node in "b fast" "c fast" "d core" "e core"; do
		set -- $node
		printf '[node %s]\nhost = %s%d\nlink_gbps = %s\nemu = %s core\n' "$1" "$P" $i "$g" "$2"
		i=$((i + 1))
	done
	printf '[model fast]\nclass = gpu\ncompute = poly 0 %s\n' "$(python3 -c "print(2.5e-4 * $SCALE)")"
	printf '[model core]\nclass = cpu\ncompute = poly 0 %s\n' "$(python3 -c "print(1e-3 * $SCALE)")"
}
jget() { python3 -c "import json,sys; d=[json.loads(l) for l in sys.stdin if l.startswith('{')][-1]; print(d.get('$1', 0))"; }
run() { "$H" mpirun ${P}1 --hostfile "$T/hosts" -np 5 "$PWD/$BUILD/plb-mm" "$@" 2>"$T/err" || { tail -5 "$T/err" >&2; return 1; }; }

printf '%-6s %-14s %9s %9s %7s %10s %9s\n' N run time bound ratio bytes_GB verified
for n in $NS_LIST; do
	SCALE=1 config >"$T/2d.ini"
	for part in fpm multiple-cpm single-cpm homogeneous; do
		out=$(run --config "$T/2d.ini" --n "$n" --block $B --prec single --layout 2d --partitioner $part --verify --json) || continue
		printf '%-6s %-14s %9.3f %9.3f %7.3f %10.3f %9s\n' "$n" "2d $part" "$(jget product_s <<<"$out")" \
			"$(jget bound_s <<<"$out")" "$(jget ratio <<<"$out")" \
			"$(python3 -c "print($(jget pivot_bytes <<<"$out") / 1e9)")" "$(jget verified <<<"$out")"
	done
	# the 1-D product: a column is n^2 / b^3 blocks' work
	SCALE=$(python3 -c "print($n * $n / $B ** 3)") config >"$T/1d.ini"
	out=$(run --config "$T/1d.ini" --n "$n" --prec single --verify --json) || continue
	printf '%-6s %-14s %9.3f %9.3f %7.3f %10.3f %9s\n' "$n" "1d plb-hac" "$(jget makespan_s <<<"$out")" \
		"$(jget lower_bound_s <<<"$out")" "$(jget ratio <<<"$out")" \
		"$(python3 -c "print(($(jget bytes_sent <<<"$out") + $(jget bytes_received <<<"$out")) / 1e9)")" \
		"$(grep -q 'verify.*: ok' "$T/err" && echo 1 || echo 0)"
done
