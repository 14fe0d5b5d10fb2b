#!/bin/sh
# Two equal-cost routed paths between two guests for `--paths` (tests/rxe/paths.rs, run by
# tests/rxe/two-hosts.sh on guests booted with `--guests 2 --rails 3` or more).
# Usage: tests/rxe/paths-net.sh GUEST(1|2) [up|down]   (down: rails 1 and 2 as the guest booted)
#
# rxe only works in the initial network namespace (rxe_net.c opens its UDP socket and routes in
# init_net; docs/soft-roce-vm.md), so each endpoint stays there: rxep on a veth `pa`
# (10.G.0.1/24). The veth's other end `pb` is in a router namespace `r`, which also takes the
# guest's links eth1 and eth2 (two equal-cost paths to the other guest's router, 10.9.1.0/24 and
# 10.9.2.0/24) and routes the other guest's 10.O.0.0/24 over both with an L4 hash
# (net.ipv4.fib_multipath_hash_policy=1: addresses, protocol and ports), as a RoCE fabric's
# switches do. rail 0 (eth0, rxe0) is left alone: the controller and agents talk over it.
set -eu
g=$1
o=$((3 - g))
if [ "${2:-up}" = down ]; then
	# Deleting the namespace hands eth1 and eth2 back to the initial one (physical devices
	# return there; the veth goes with it, and rxep with the veth).
	rdma link delete rxep 2>/dev/null || true
	ip netns del r 2>/dev/null || true
	# Each rail as the guest booted it: ethK back with its address, rxeK on it.
	for k in 1 2; do
		"$(dirname "$0")/shaped-rail.sh" "$g" "$k" down
	done
	exit 0
fi
for dev in rxe1 rxe2; do
	rdma link delete "$dev" 2>/dev/null || true
done
ip netns add r
ip link add pa type veth peer name pb
ip link set pb netns r
ip link set eth1 netns r
ip link set eth2 netns r
ip addr add "10.$g.0.1/24" dev pa
ip link set pa up
ip route add "10.$o.0.0/24" via "10.$g.0.254"
ip netns exec r sh -eu -c "
ip link set lo up
ip addr add 10.$g.0.254/24 dev pb
ip link set pb up
ip addr add 10.9.1.$g/24 dev eth1
ip link set eth1 up
ip addr add 10.9.2.$g/24 dev eth2
ip link set eth2 up
echo 1 >/proc/sys/net/ipv4/ip_forward
echo 1 >/proc/sys/net/ipv4/fib_multipath_hash_policy
for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 >\$f; done
ip route add 10.$o.0.0/24 nexthop via 10.9.1.$o dev eth1 nexthop via 10.9.2.$o dev eth2
"
rdma link add rxep type rxe netdev pa
