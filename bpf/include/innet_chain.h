/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * What the chain node programs (bpf/netcraq.bpf.c, bpf/netchain.bpf.c) share:
 * verdict codes, roles, the port table and the ACK multicast group. The
 * loader is crates/xdp/src/chain.rs; its const asserts hold every constant
 * here equal to innet_core / innet_chain.
 *
 * A verdict of the payload logic is an innet_core::Verdict: the low byte is
 * Verdict::code(), bits 8..23 carry the port (Port) or group (Multicast).
 * The XDP wrapper turns it into an action:
 *   REFLECT   -> swap addresses, XDP_TX
 *   PORT p    -> MACs and destination IP of chain_ports[p], redirect to its
 *                ifindex (the IP source, the origin, is kept)
 *   ORIGIN    -> destination = the packet's IP/UDP source (NetChain: at
 *                config.reply_port if set), source = this node, out of
 *                chain_ports[config.origin_port]
 *   MULTICAST -> XDP_PASS with the rewritten payload: the tc clsact program
 *                of the same object (tc_chain_multicast) clones it to every
 *                member of chain_group
 *   DROP      -> XDP_DROP
 */
#ifndef INNET_CHAIN_H
#define INNET_CHAIN_H

/* innet_core::Verdict::code() */
#define INNET_CHAIN_VERDICT_DROP 0
#define INNET_CHAIN_VERDICT_REFLECT 3
#define INNET_CHAIN_VERDICT_PORT 4
#define INNET_CHAIN_VERDICT_MULTICAST 5
#define INNET_CHAIN_VERDICT_ORIGIN 6

/* innet_chain::Role; 0 = not configured (a fresh switch drops everything). */
#define INNET_CHAIN_ROLE_NONE 0
#define INNET_CHAIN_ROLE_HEAD 1
#define INNET_CHAIN_ROLE_REPLICA 2
#define INNET_CHAIN_ROLE_TAIL 3
#define INNET_CHAIN_ROLE_HEAD_TAIL 4

/* innet_chain::ports */
#define INNET_CHAIN_PORT_NEXT 0
#define INNET_CHAIN_PORT_TAIL 1
#define INNET_CHAIN_GROUP_ACK 0

/* Entries of chain_ports, chain_group and chain_peers. */
#define INNET_CHAIN_PORTS_MAX 16
#define INNET_CHAIN_GROUP_MAX 16
#define INNET_CHAIN_PEERS_MAX 32

/* A chain index that names no node (config prev / tail; a sender that is
 * not a chain node). */
#define INNET_CHAIN_PEER_NONE 0xffffffff

/* Map chain_peers (hash, INNET_CHAIN_PEERS_MAX): who sent a frame, by
 * ingress interface and Ethernet source -> the sender's chain index
 * (innet_core::Ingress::Peer). A frame whose pair is not here is from
 * outside the chain (a client). Written by the loader from the testbed's
 * wiring. */
struct innet_chain_peer_key {
	__u32 ifindex;
	__u8 mac[6];
	__u8 pad[2]; /* zero */
};
#define INNET_CHAIN_PEER_KEY_SIZE 12
_Static_assert(sizeof(struct innet_chain_peer_key) == INNET_CHAIN_PEER_KEY_SIZE, "peer key size");

/* Map chain_ports (array, INNET_CHAIN_PORTS_MAX): one neighbour per port. */
struct innet_chain_port {
	__u32 ifindex; /* 0: port not configured (drop) */
	__be32 ip;     /* the neighbour's address (Port rewrites the destination to it) */
	__u8 port_mac[6]; /* this node's MAC on that link */
	__u8 peer_mac[6]; /* the neighbour's MAC */
};
#define INNET_CHAIN_PORT_SIZE 20
_Static_assert(sizeof(struct innet_chain_port) == INNET_CHAIN_PORT_SIZE, "port size");

/* Map chain_group (array, INNET_CHAIN_GROUP_MAX): the tail's ACK group. */
#define INNET_CHAIN_MEMBER_NONE 0
#define INNET_CHAIN_MEMBER_PORT 1   /* chain_ports[port] */
#define INNET_CHAIN_MEMBER_ORIGIN 2 /* the packet's origin, via config.origin_port */
struct innet_chain_member {
	__u32 kind; /* INNET_CHAIN_MEMBER_* */
	__u32 port;
};
#define INNET_CHAIN_MEMBER_SIZE 8
_Static_assert(sizeof(struct innet_chain_member) == INNET_CHAIN_MEMBER_SIZE, "member size");

#endif /* INNET_CHAIN_H */
