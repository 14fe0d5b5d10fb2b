#!/bin/sh
# A rail whose link can be shaped (tbf, netem delay) without panicking the guest's kernel.
# Usage: tests/rxe/shaped-rail.sh GUEST(1|2) K up|down
#
# Why a router: a qdisc that holds packets on rxe's own netdev (tbf, netem delay) panicked Debian
# 6.1's kernel. rxe_net.c's rxe_send() sets each packet's skb->sk to its QP's UDP socket and its
# destructor to rxe_skb_tx_dtor(); a QP destroyed while the qdisc still holds its packets frees that
# socket, and the packet's release then reads freed memory (later kernels take a reference on the
# socket, "RDMA/rxe: Fix rxe_skb_tx_dtor problem"). A packet that is routed is no longer anyone's:
# ip_rcv_core() orphans every packet it receives (skb_orphan, "Must drop socket now because of
# tproxy") before forwarding it. So rxeK moves onto a veth `vK` in the initial namespace (rxe
# works only there), and the rail's link ethK moves into a router namespace `shapeK` joined to it
# by the veth's other end `wK`; the router forwards between them and answers ARP for both sides
# (proxy ARP), so the rail keeps its address 198.18.K.G/24 and the other guest sees no change. A
# qdisc on ethK inside `shapeK` then holds only orphaned packets:
#   ip netns exec shapeK tc qdisc add dev ethK root tbf rate 2mbit burst 16kb latency 200ms
# down: the namespace deleted hands ethK back, and rxeK is made on it again as the guest booted.
set -eu
g=$1
k=$2
ns=shape$k
case "${3:-up}" in
down)
	rdma link delete "rxe$k" 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		ip link show "eth$k" >/dev/null 2>&1 && break
		sleep 0.5
	done
	ip addr add "198.18.$k.$g/24" dev "eth$k" 2>/dev/null || true
	ip link set "eth$k" up
	rdma link show "rxe$k/1" >/dev/null 2>&1 || rdma link add "rxe$k" type rxe netdev "eth$k"
	exit 0
	;;
up) ;;
*)
	echo "usage: $0 GUEST K up|down" >&2
	exit 2
	;;
esac
me=198.18.$k.$g
router=198.18.$k.$((200 + g))
rdma link delete "rxe$k" 2>/dev/null || true
ip addr del "$me/24" dev "eth$k" 2>/dev/null || true
ip netns add "$ns"
ip link add "v$k" type veth peer name "w$k"
ip link set "w$k" netns "$ns"
ip link set "eth$k" netns "$ns"
ip addr add "$me/24" dev "v$k"
ip link set "v$k" up
ip netns exec "$ns" sh -eu -c "
ip link set lo up
ip link set w$k up
ip link set eth$k up
ip addr add $router/32 dev eth$k
echo 1 >/proc/sys/net/ipv4/ip_forward
for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 >\$f; done
echo 1 >/proc/sys/net/ipv4/conf/eth$k/proxy_arp
echo 1 >/proc/sys/net/ipv4/conf/w$k/proxy_arp
ip route add $me/32 dev w$k src $router
ip route add 198.18.$k.0/24 dev eth$k src $router
"
rdma link add "rxe$k" type rxe netdev "v$k"
# The port is ACTIVE once the veth is up; wait (bounded) so the caller's first QP finds it.
for _ in 1 2 3 4 5 6 7 8 9 10; do
	grep -q ACTIVE "/sys/class/infiniband/rxe$k/ports/1/state" 2>/dev/null && exit 0
	sleep 0.5
done
echo "shaped-rail: rxe$k on v$k never became ACTIVE" >&2
exit 1
