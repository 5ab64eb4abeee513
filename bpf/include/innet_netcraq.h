/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The NetCRAQ format and the NetCRAQ node's maps (bpf/netcraq.bpf.c), shared
 * with the loader (crates/xdp/src/chain.rs).
 *
 * The Rust definition is crates/wire/src/netcraq.rs, its golden vectors
 * crates/wire/golden/netcraq.json; chain.rs asserts every constant below
 * equal to innet_wire::netcraq's and innet_chain::netcraq's at compile time,
 * and crates/xdp/tests/chain_differential.rs runs the golden vectors.
 *
 * UDP payload (network byte order): kv_op(1) key(4) value(16).
 */
#ifndef INNET_NETCRAQ_H
#define INNET_NETCRAQ_H

#include "innet_chain.h"

#define INNET_CRAQ_LEN 21
#define INNET_CRAQ_VALUE_LEN 16
#define INNET_CRAQ_DEFAULT_PORT 9201
#define INNET_CRAQ_OFF_KV_OP 0
#define INNET_CRAQ_OFF_KEY 1
#define INNET_CRAQ_OFF_VALUE 5

/* innet_wire::netcraq::KvOp */
#define INNET_CRAQ_OP_READ 1
#define INNET_CRAQ_OP_READ_REPLY 2
#define INNET_CRAQ_OP_WRITE 3
#define INNET_CRAQ_OP_WRITE_REPLY 4
#define INNET_CRAQ_OP_ACK 5
#define INNET_CRAQ_OP_WRITE_REFUSED 6

/* innet_wire::netcraq::DecodeError */
#define INNET_CRAQ_ERR_TRUNCATED 0
#define INNET_CRAQ_ERR_UNKNOWN_OP 1
#define INNET_CRAQ_ERR_COUNT 2

/* Capacities: innet_chain::netcraq::{OBJECTS_DEFAULT, VERSIONS_DEFAULT,
 * VERSIONS_MAX}. craq_store has objects * versions cells, craq_index
 * objects; a loader may resize both and must write the sizes to the config. */
#define INNET_CRAQ_OBJECTS_DEFAULT 1024
#define INNET_CRAQ_VERSIONS_DEFAULT 8
#define INNET_CRAQ_VERSIONS_MAX 64

struct innet_craq_hdr {
	__u8 kv_op;
	__be32 key;
	__u8 value[INNET_CRAQ_VALUE_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct innet_craq_hdr) == INNET_CRAQ_LEN, "NetCRAQ packet size");
_Static_assert(__builtin_offsetof(struct innet_craq_hdr, kv_op) == INNET_CRAQ_OFF_KV_OP, "kv_op offset");
_Static_assert(__builtin_offsetof(struct innet_craq_hdr, key) == INNET_CRAQ_OFF_KEY, "key offset");
_Static_assert(__builtin_offsetof(struct innet_craq_hdr, value) == INNET_CRAQ_OFF_VALUE, "value offset");

/* Counters, in the order of CraqCounters::counters(); then XDP-only ones. */
#define INNET_CRAQ_CTR_READS_CLEAN 0
#define INNET_CRAQ_CTR_READS_TO_TAIL 1
#define INNET_CRAQ_CTR_READS_AT_TAIL 2
#define INNET_CRAQ_CTR_WRITES_DIRTY 3
#define INNET_CRAQ_CTR_WRITES_COMMITTED_AT_TAIL 4
#define INNET_CRAQ_CTR_WRITES_REFUSED_FULL 5
#define INNET_CRAQ_CTR_WRITES_REFUSED_PAUSED 6
#define INNET_CRAQ_CTR_ACKS_APPLIED 7
#define INNET_CRAQ_CTR_ACKS_STALE 8
#define INNET_CRAQ_CTR_DROPPED_UNCONFIGURED 9
#define INNET_CRAQ_CTR_DROPPED_UNEXPECTED 10
#define INNET_CRAQ_CTR_DROPPED_KEY_OUT_OF_RANGE 11
#define INNET_CRAQ_CTR_DROPPED_WRITE_NOT_FROM_PREV 12
#define INNET_CRAQ_CTR_DROPPED_ACK_NOT_FROM_TAIL 13
#define INNET_CRAQ_CTR_DROPPED_MALFORMED 14 /* + INNET_CRAQ_ERR_* */
#define INNET_CRAQ_CTR_NODE_COUNT 16	    /* counters the Rust reference has */
#define INNET_CRAQ_CTR_XDP_PASSED_OTHER 16 /* not NetCRAQ traffic: XDP_PASS */
#define INNET_CRAQ_CTR_XDP_NO_PORT 17	    /* a verdict's port has no ifindex: dropped */
#define INNET_CRAQ_CTR_MULTICAST_COPIES 18 /* copies tc_chain_multicast sent */
#define INNET_CRAQ_CTR_AUTH_REFUSED 19	    /* --auth-key: from a chain node without a trailer that checks */
#define INNET_CRAQ_CTR_COUNT 20
_Static_assert(INNET_CRAQ_CTR_DROPPED_MALFORMED + INNET_CRAQ_ERR_COUNT == INNET_CRAQ_CTR_NODE_COUNT, "counters");

/* Map craq_config (array, 1 entry): written by the control plane. */
/* config.mcast: the tail's ACK group by tc clones (tc_chain_multicast:
 * any number of members per device) or by a devmap broadcast
 * (craq_group_ports, xdp_craq_egress: one member per device, the copies
 * stay XDP frames). */
#define INNET_CRAQ_MCAST_TC 0
#define INNET_CRAQ_MCAST_DEVMAP 1

struct innet_craq_config {
	__u32 role;	     /* INNET_CHAIN_ROLE_* */
	__u32 writes_paused; /* refuse writes (recovery) */
	__u32 objects;	     /* craq_index max_entries */
	__u32 versions;	     /* cells per object: craq_store max_entries / objects */
	__u32 udp_port;	     /* host order; 9201 */
	__be32 node_ip;	     /* this node's address (source of Origin replies) */
	__u32 origin_port;   /* chain_ports index towards the clients */
	__u32 prev;	     /* the predecessor's chain index (its writes), or INNET_CHAIN_PEER_NONE */
	__u32 tail;	     /* the tail's chain index (its ACKs), or INNET_CHAIN_PEER_NONE */
	__u32 mcast;	     /* how the tail's ACK reaches its group: INNET_CRAQ_MCAST_* */
};
#define INNET_CRAQ_CONFIG_SIZE 40
_Static_assert(sizeof(struct innet_craq_config) == INNET_CRAQ_CONFIG_SIZE, "config size");

/* One cell of craq_store (Algorithm 1's objects_store). */
struct innet_craq_cell {
	__u8 value[INNET_CRAQ_VALUE_LEN];
};
_Static_assert(sizeof(struct innet_craq_cell) == INNET_CRAQ_VALUE_LEN, "cell size");

#endif /* INNET_NETCRAQ_H */
