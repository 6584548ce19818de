#!/usr/bin/env bash
# make bench (many ranks, many hosts): the runtime's ratio against plbsim's
# for the same scenario (plb-hac, plb-null on emulated PUs)
#  1. 64 worker ranks on this machine (mpirun -np 65), one emulated PU
#     each, four kinds of device: a 5 s run;
#  2. four emulated hosts (scripts/netns-hosts.sh: network namespaces on
#     a bridge, real TCP between them; needs root), five ranks, six PUs.
# Figures are printed, not asserted: this machine is shared and noisy.
SEEDS=${SEEDS:-3}
. "$(dirname "$0")/lib.bash"
jget() { python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print(d['$1'])"; }
models() {
	cat <<'INI'
[model cpu8]
class = cpu
compute = poly 0.001 4e-5
noise = 0.03
[model cpu4]
class = cpu
compute = poly 0.001 8e-5
noise = 0.03
[model gpuA]
class = gpu
compute = poly 0.004 1e-5
transfer = poly 1e-4 2e-7
noise = 0.02
[model gpuB]
class = gpu
compute = poly 0.003 2e-5
transfer = poly 1e-4 2e-7
noise = 0.02
INI
}
# compare NAME INI LAUNCH...: plbsim and the runtime (LAUNCH plb-null) per seed
compare() {
	local name=$1 ini=$2 seed sim rt; shift 2
	for seed in $(seq 1 "$SEEDS"); do
		sed -i "s/^seed = .*/seed = $seed/" "$ini"
		sim=$("$BUILD/plbsim" "$ini" --policy plb-hac --json | jget ratio)
		rt=$("$@" --config "$ini" --policy plb-hac --json 2>/dev/null | grep '^{')
		python3 -c "print('%-12s %5d %10.4f %10.4f %10.4f %10.2f' % ('$name', $seed, $sim, $(jget ratio <<<"$rt"), $(jget ratio <<<"$rt") / $sim, $(jget makespan_s <<<"$rt")))"
	done
}
printf '%-12s %5s %10s %10s %10s %10s\n' scenario seed sim_ratio rt_ratio rt/sim rt_span_s

{
	printf '[run]\nunits = 15000000\npipeline = 2\nseed = 1\n'
	kinds=(cpu8 gpuA gpuB cpu4)
	for i in $(seq 0 63); do printf '[node n%d]\nemu = %s\n' "$i" "${kinds[i % 4]}"; done
	models
} >"$T/w64.ini"
compare "64 ranks" "$T/w64.ini" timeout 600 mpirun --oversubscribe --bind-to none -np 65 "$BUILD/plb-null"

if ! bash scripts/netns-hosts.sh check; then
	echo "(four emulated hosts: no network namespaces here; needs root and iproute2)"
	exit 0
fi
P=plb$$b
NS=$PWD/scripts/netns-hosts.sh
trap '$NS down $P; rm -rf "$T"' EXIT
$NS up $P 4
{
	printf '[run]\nunits = 1600000\npipeline = 2\nseed = 1\n'
	printf '[node a]\nhost = %s1\nemu = cpu8 cpu4\n[node b]\nhost = %s2\nemu = gpuA\n' $P $P
	printf '[node c]\nhost = %s3\nemu = cpu8 gpuB\n[node d]\nhost = %s4\nemu = gpuA\n' $P $P
	models
} >"$T/h4.ini"
printf '%s1 slots=2\n%s2 slots=1\n%s3 slots=1\n%s4 slots=1\n' $P $P $P $P >"$T/hosts"
compare "4 hosts" "$T/h4.ini" timeout 600 "$NS" mpirun ${P}1 --hostfile "$T/hosts" -np 5 \
	"$PWD/$BUILD/plb-null"
