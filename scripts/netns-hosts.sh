#!/usr/bin/env bash
# Emulated hosts on one machine, for multi-node runs and tests: Linux
# network namespaces joined by veth pairs to a bridge in a namespace of its
# own, real TCP between them, each with its own hostname and /etc/hosts,
# and mpirun's rsh launcher pointed at this script. Needs root (or
# CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2.
#
#   netns-hosts.sh up PREFIX N     namespaces PREFIX1..PREFIXN (the hosts,
#                                  10.201.0.1..N/24) and PREFIXbr (the bridge)
#   netns-hosts.sh down PREFIX     remove them and their /etc/netns entries
#   netns-hosts.sh check           exit 0 where namespaces can be made here
#   netns-hosts.sh exec HOST CMD   run CMD as on HOST (its namespace, its
#                                  hostname)
#   netns-hosts.sh link HOST up|down
#                                  take HOST's cable out of the bridge, or
#                                  put it back
#   netns-hosts.sh mpirun HOST ARGS...
#                                  mpirun ARGS on HOST, launching on the
#                                  other hosts of its set through rsh below
#   netns-hosts.sh rsh HOST CMD... mpirun's launcher: CMD on HOST, a host
#                                  of the set named by $PLB_NETNS_PREFIX,
#                                  nothing else
#
# The mpirun mode adds what such a job needs: the rsh launcher (no tree
# spawn), Open MPI's TCP traffic kept on the hosts' subnet, and
# --bind-to none (else every emulated host binds its ranks to core 0).
set -eu
SUBNET=${PLB_NETNS_SUBNET:-10.201.0}
die() { echo "netns-hosts.sh: $*" >&2; exit 2; }
valid() {       # a prefix: letters and digits, short enough for an interface
	[[ $1 =~ ^[a-z][a-z0-9]{0,8}[a-z]$ ]] || die "'$1' is not a prefix (2-10 lower-case letters and digits, a letter first and last)"
}
# split HOST: its set's prefix in $hp, its number in $hn
split() {
	[[ $1 =~ ^([a-z][a-z0-9]*[a-z])([0-9]+)$ ]] || die "'$1' is not an emulated host"
	hp=${BASH_REMATCH[1]} hn=${BASH_REMATCH[2]}
}
hosts_of() { ip netns list | sed -n "s/^\($1[0-9][0-9]*\)\b.*/\1/p" | sort -V; }

up() {
	local p=$1 n=$2 i
	valid "$p"
	[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die "host count '$n': give 1-250"
	[ -z "$(hosts_of "$p")" ] || die "namespaces $p* exist already (netns-hosts.sh down $p)"
	ip netns add "${p}br"
	ip -n "${p}br" link add br0 type bridge
	ip -n "${p}br" link set br0 up
	for i in $(seq "$n"); do
		ip netns add "$p$i"
		ip link add "${p}v$i" netns "$p$i" type veth peer name "b$i" netns "${p}br"
		ip -n "$p$i" link set "${p}v$i" name eth0
		ip -n "$p$i" addr add "$SUBNET.$i/24" dev eth0
		ip -n "$p$i" link set eth0 up
		ip -n "$p$i" link set lo up
		ip -n "${p}br" link set "b$i" master br0
		ip -n "${p}br" link set "b$i" up
	done
	# ip netns exec bind-mounts /etc/netns/NS/* over /etc/*: each host
	# resolves every other by name
	for i in $(seq "$n"); do
		mkdir -p "/etc/netns/$p$i"
		{
			echo "127.0.0.1 localhost"
			for j in $(seq "$n"); do echo "$SUBNET.$j $p$j"; done
		} >"/etc/netns/$p$i/hosts"
	done
}

down() {
	local p=$1 h
	valid "$p"
	for h in $(hosts_of "$p"); do
		# whatever still runs there (a rank, a daemon) goes with it
		ip netns pids "$h" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$h" 2>/dev/null || true
		rm -rf "/etc/netns/$h"
	done
	ip netns del "${p}br" 2>/dev/null || true
}

# on HOST CMD: CMD in HOST's namespace, with HOST as the hostname
on() {
	local h=$1; shift
	ip netns list | grep -q "^$h\b" || die "no emulated host '$h'"
	exec ip netns exec "$h" unshare --uts sh -c "hostname '$h' && exec \"\$@\"" sh "$@"
}

case ${1:-} in
check)
	# what up and exec need: a namespace, a veth pair in it, a hostname
	command -v ip >/dev/null 2>&1 || exit 1
	ip netns add "plbprobe$$" 2>/dev/null || exit 1
	ok=0
	ip -n "plbprobe$$" link add pa type veth peer name pb 2>/dev/null &&
		ip netns exec "plbprobe$$" unshare --uts sh -c 'hostname plbprobe' 2>/dev/null && ok=1
	ip netns del "plbprobe$$"
	[ $ok = 1 ]
	;;
up) [ $# = 3 ] || die "usage: up PREFIX N"; up "$2" "$3" ;;
down) [ $# = 2 ] || die "usage: down PREFIX"; down "$2" ;;
exec) [ $# -ge 3 ] || die "usage: exec HOST CMD..."; h=$2; shift 2; on "$h" "$@" ;;
link)
	[ $# = 3 ] || die "usage: link HOST up|down"
	split "$2"
	ip -n "${hp}br" link set "b$hn" "$3"
	;;
mpirun)
	[ $# -ge 3 ] || die "usage: mpirun HOST ARGS..."
	split "$2"
	h=$2; shift 2
	export PLB_NETNS_PREFIX=$hp
	self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
	on "$h" mpirun --bind-to none --mca plm_rsh_agent "$self rsh" --mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include "$SUBNET.0/24" --mca btl_tcp_if_include "$SUBNET.0/24" "$@"
	;;
rsh)
	# mpirun calls AGENT HOST "orted ...": refuse any host outside the set
	[ $# -ge 3 ] || die "usage: rsh HOST CMD..."
	h=$2; shift 2
	p=${PLB_NETNS_PREFIX:?netns-hosts.sh rsh: set PLB_NETNS_PREFIX}
	[[ $h =~ ^$p[0-9]+$ ]] || die "rsh: '$h' is not one of the emulated hosts $p*"
	on "$h" sh -c "$*"
	;;
*) die "usage: up PREFIX N | down PREFIX | check | exec HOST CMD | link HOST up|down | mpirun HOST ARGS | rsh HOST CMD" ;;
esac
