#!/usr/bin/env bash
# make bench-links: the master's link as the limit, for real. Four emulated
# hosts (scripts/netns-hosts.sh: network namespaces on a bridge, TCP
# between them; needs root), the master alone on the first, workers with
# emulated PUs on the other three; the first host's link shaped with tc
# (tbf) to each RATE of RATES (default "1gbit 200mbit") both ways, and
# [network] link_gbps set to it. plb-bs (options drawn on the nodes: the
# prices come back, 8 bytes an option in single) and plb-mm (A to every
# node, then B's columns out and C's back) on them, the report's ratio
# against its link-aware bound (the larger of the PUs' bound and the
# job's bytes over link_gbps) and the link's share of the bound; then the
# same cluster in plbsim (its links, the units' and the shared data's
# bytes as the run's, --solve-us 100; plb-bs's is config/sim/link-bs.ini):
# its makespan and ratio (its bound counts the shared data's copies a run
# needs, the runtime's those it sent), and the runtime's makespan over
# plbsim's. The emulated PUs' models are fast next to the link, so it
# bounds the run, and slower than the real kernels here (an emulated PU
# runs the kernel, then waits for its model's time). Figures only: this
# machine is shared.
set -euo pipefail
BUILD=${BUILD:-build}
RATES=${RATES:-1gbit 200mbit}
# LINK_GIVEN=0: the runtime's config leaves [network] link_gbps out: the
# master times the link at start (runtime/core/link.c), and its bound,
# ratio and plan use what it found (the column `link`: Gbit/s out/in as
# the run took it); plbsim still has the tc rate. Ranks taken out for
# silence are counted (KEEP_ERR=PREFIX keeps each run's log as
# PREFIX.APP.RATE).
LINK_GIVEN=${LINK_GIVEN:-1}
# SLOW_HOST=RATE: the last host's own link shaped to RATE too (a worker
# behind a slower link: the probe's rate and its warning naming it).
# QUEUE_MIN=off: the ranks send every message at once (PLB_MPI_QUEUE_MIN,
# docs/ARCHITECTURE.md "Links"), as plb did before 2026-11-28: compare.
QUEUE=()
if [ -n "${QUEUE_MIN:-}" ]; then QUEUE=(-x PLB_MPI_QUEUE_MIN="$QUEUE_MIN"); fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NS=$PWD/scripts/netns-hosts.sh
if ! bash "$NS" check; then
	echo "bench-links: no network namespaces here (needs root and iproute2)" >&2
	exit 1
fi
if ! command -v tc >/dev/null; then
	echo "bench-links: no tc (Debian: iproute2)" >&2
	exit 1
fi
T=$(mktemp -d)
P=plbl$$x
trap '"$NS" down $P; rm -rf "$T"' EXIT
"$NS" up $P 4
printf '%s1 slots=1\n%s2 slots=1\n%s3 slots=1\n%s4 slots=1\n' $P $P $P $P >"$T/hosts"

gbps() { # 1gbit -> 1, 200mbit -> 0.2
	python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)(g|m)bit', sys.argv[1]); print(float(m[1]) * (1 if m[2] == 'g' else 1e-3))" "$1"
}
shape() { # shape RATE: the first host's link both ways (its side and the bridge's)
	ip netns exec ${P}1 tc qdisc replace dev eth0 root tbf rate "$1" burst 512kb latency 100ms
	ip netns exec ${P}br tc qdisc replace dev b1 root tbf rate "$1" burst 512kb latency 100ms
	if [ -n "${SLOW_HOST:-}" ]; then
		ip netns exec ${P}4 tc qdisc replace dev eth0 root tbf rate "$SLOW_HOST" burst 64kb latency 100ms
		ip netns exec ${P}br tc qdisc replace dev b4 root tbf rate "$SLOW_HOST" burst 64kb latency 100ms
	fi
}
# config GBPS IN OUT SHARED FAST SLOW: the cluster (IN / OUT: a unit's
# bytes, SHARED: what every node gets first, for plbsim; FAST / SLOW: the
# two models' seconds a unit)
config() {
	cat <<INI
[run]
units = 1
pipeline = 2
in_bytes = $2
out_bytes = $3
shared_bytes = $4
[network]
link_gbps = $1
latency_us = 100
[node b]
host = ${P}2
emu = fast fast
[node c]
host = ${P}3
emu = fast slow
[node d]
host = ${P}4
emu = slow
[model fast]
class = gpu
compute = poly 0.002 $5
[model slow]
class = cpu
compute = poly 0.001 $6
INI
}
jget() { python3 -c "import json,sys; d=[json.loads(l) for l in sys.stdin if l.startswith('{')][-1]; print(d.get('$1', 0))"; }

printf '%-8s %-28s %11s %9s %9s %9s %8s %9s %9s %8s\n' tc run link makespan bound link_s ratio sim_span sim_ratio rt/sim
for rate in $RATES; do
	shape "$rate"
	g=$(gbps "$rate")
	for job in "bs --n 20000000 --prec single" "mm --n 2048 --prec single"; do
		set -- $job
		app=$1
		# a unit's bytes: bs: none in, 8 out; mm: a column of B in and of
		# C out, and A (2048 x 2048 floats) to every node first. The
		# models' seconds a unit: slower than the real kernel here (an
		# emulated PU runs it, then waits for its model's time; one that
		# ran past the model, as plb-mm's columns did at 1e-9 s against
		# 8e-5 s, holds its PU longer than plbsim knows): bs 1.3e-8 s an
		# option, mm 7.8e-5 s a column on one core of this VM
		case $app in
		bs) ib=0 ob=8 sb=0 fast=2e-8 slow=4e-8 ;;
		mm) ib=8192 ob=8192 sb=16777216 fast=5e-4 slow=1e-3 ;;
		esac
		config "$g" $ib $ob $sb $fast $slow >"$T/c.ini"
		if [ "$LINK_GIVEN" = 0 ]; then sed -i '/^link_gbps = /d' "$T/c.ini"; fi
		# rank 0, the master, alone on the first host; a worker on each other
		out=$("$NS" mpirun ${P}1 --hostfile "$T/hosts" -np 4 "${QUEUE[@]}" "$PWD/$BUILD/plb-$app" \
			--config "$T/c.ini" "${@:2}" --json 2>"$T/err") || { cat "$T/err" >&2; continue; }
		lost=$(grep -c "taken out of the run" "$T/err" || true)
		grep -ao "rank [0-9]* ([^)]*) answered the link's probe [^:]*" "$T/err" >&2 || true
		if [ -n "${KEEP_ERR:-}" ]; then cp "$T/err" "$KEEP_ERR.$app.$rate"; fi
		if [ "$lost" -gt 0 ]; then echo "$rate $job: $lost rank(s) taken out for silence" >&2; fi
		config "$g" $ib $ob $sb $fast $slow >"$T/c.ini"
		span=$(jget makespan_s <<<"$out") lb=$(jget lower_bound_s <<<"$out") ls=$(jget link_bound_s <<<"$out")
		lo=$(jget link_out_gbps <<<"$out") li=$(jget link_in_gbps <<<"$out")
		# plbsim: the same cluster with the run's units
		units=$(jget units <<<"$out")
		sed -i "s/^units = 1$/units = $units/" "$T/c.ini"
		# (its bound counts the shared data's copies the run needs, the
		# runtime's those it sent: rt/sim compares the makespans)
		sim=$("$BUILD/plbsim" "$T/c.ini" --policy plb-hac --json --solve-us 100 2>/dev/null |
			python3 -c "import json,sys; d = json.load(sys.stdin); print(d['makespan_s'], d['ratio'])")
		python3 -c "
s, lb, ls, ss, sr = $span, $lb, $ls, ${sim% *}, ${sim#* }
print('%-8s %-28s %11s %9.3f %9.3f %9.3f %8.3f %9.3f %9.3f %8.3f' % ('$rate', '$job', '%.3g/%.3g' % ($lo, $li), s, lb, ls, s / lb, ss, sr, s / ss))"
	done
done
