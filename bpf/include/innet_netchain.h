/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The NetChain format and the NetChain node's maps (bpf/netchain.bpf.c),
 * shared with the loader (crates/xdp/src/chain.rs).
 *
 * The Rust definition is crates/wire/src/netchain.rs, its golden vectors
 * crates/wire/golden/netchain.json; chain.rs asserts every constant below
 * equal to innet_wire::netchain's and innet_chain::netchain's at compile
 * time, and crates/xdp/tests/chain_differential.rs runs the golden vectors.
 *
 * UDP payload (network byte order), as NetChain's P4 reference
 * (netx-repo/netchain-p4) speaks it: a stack of node addresses (4 bytes
 * each, at most INNET_NC_MAX_CHAIN_NODES), a zero address ending it, then
 * the fixed part: op(1) sc(1) seq(2) key(16) value(16) vgroup(2); sc counts
 * the stack's entries, the terminator included. A write reply has no stack
 * at all: exactly INNET_NC_FIXED_LEN bytes, sc 0. Requests go to UDP port
 * INNET_NC_DEFAULT_PORT (the reference's NC_PORT), replies to the client's
 * INNET_NC_REPLY_PORT (REPLY_PORT) when the node is configured so.
 */
#ifndef INNET_NETCHAIN_H
#define INNET_NETCHAIN_H

#include "innet_chain.h"

#define INNET_NC_MAX_CHAIN_NODES 10
#define INNET_NC_ADDR_LEN 4
#define INNET_NC_KEY_LEN 16
#define INNET_NC_VALUE_LEN 16
#define INNET_NC_FIXED_LEN 38
#define INNET_NC_MAX_LEN 82
#define INNET_NC_DEFAULT_PORT 8888
#define INNET_NC_REPLY_PORT 8889
#define INNET_NC_OFF_OP 0
#define INNET_NC_OFF_SC 1
#define INNET_NC_OFF_SEQ 2
#define INNET_NC_OFF_KEY 4
#define INNET_NC_OFF_VALUE 20
#define INNET_NC_OFF_VGROUP 36

/* innet_wire::netchain::NcOp: the reference's NC_READ_REQUEST .. NC_WRITE_REPLY */
#define INNET_NC_OP_READ_REQ 10
#define INNET_NC_OP_READ_REPLY 11
#define INNET_NC_OP_WRITE_REQ 12
#define INNET_NC_OP_WRITE_REPLY 13
_Static_assert(INNET_NC_OP_READ_REPLY == INNET_NC_OP_READ_REQ + 1 && INNET_NC_OP_WRITE_REQ == INNET_NC_OP_READ_REQ + 2 &&
		       INNET_NC_OP_WRITE_REPLY == INNET_NC_OP_READ_REQ + 3,
	       "op codes 10..13: nc_validate checks a range");

/* innet_wire::netchain::DecodeError */
#define INNET_NC_ERR_TRUNCATED 0
#define INNET_NC_ERR_CHAIN_TOO_LONG 1
#define INNET_NC_ERR_UNKNOWN_OP 2
#define INNET_NC_ERR_CHAIN_COUNT_MISMATCH 3
#define INNET_NC_ERR_COUNT 4

/* innet_chain::netchain::{KEYS_DEFAULT, KEY_PROBES, NEIGHBOURS_MAX} */
#define INNET_NC_KEYS_DEFAULT 1024
#define INNET_NC_KEY_PROBES 8
#define INNET_NC_NEIGHBOURS_MAX 20

struct innet_nc_fixed {
	__u8 op;
	__u8 sc;
	__be16 seq;
	__u8 key[INNET_NC_KEY_LEN];
	__u8 value[INNET_NC_VALUE_LEN];
	__be16 vgroup;
} __attribute__((packed));
_Static_assert(sizeof(struct innet_nc_fixed) == INNET_NC_FIXED_LEN, "fixed part size");
_Static_assert(__builtin_offsetof(struct innet_nc_fixed, op) == INNET_NC_OFF_OP, "op offset");
_Static_assert(__builtin_offsetof(struct innet_nc_fixed, sc) == INNET_NC_OFF_SC, "sc offset");
_Static_assert(__builtin_offsetof(struct innet_nc_fixed, seq) == INNET_NC_OFF_SEQ, "seq offset");
_Static_assert(__builtin_offsetof(struct innet_nc_fixed, key) == INNET_NC_OFF_KEY, "key offset");
_Static_assert(__builtin_offsetof(struct innet_nc_fixed, value) == INNET_NC_OFF_VALUE, "value offset");
_Static_assert(__builtin_offsetof(struct innet_nc_fixed, vgroup) == INNET_NC_OFF_VGROUP, "vgroup offset");
_Static_assert(INNET_NC_MAX_LEN == (INNET_NC_MAX_CHAIN_NODES + 1) * INNET_NC_ADDR_LEN + INNET_NC_FIXED_LEN,
	       "max packet: full stack, terminator, fixed part");
/* golden write_req_4_chain: 4 addresses + terminator + fixed part = 58 bytes */
_Static_assert(5 * INNET_NC_ADDR_LEN + INNET_NC_FIXED_LEN == 58, "58-byte header of a 4-node chain");
/* golden reference_write_reply: the stackless write reply */
_Static_assert(INNET_NC_FIXED_LEN == 38, "a write reply is the fixed part alone");

/* Counters, in the order of NcCounters::counters(); then XDP-only ones. */
#define INNET_NC_CTR_WRITES_SEQUENCED 0
#define INNET_NC_CTR_WRITES_APPLIED 1
#define INNET_NC_CTR_WRITES_STALE 2
#define INNET_NC_CTR_WRITES_DROPPED_PAUSED 3
#define INNET_NC_CTR_READS_ANSWERED 4
#define INNET_NC_CTR_FORWARDED 5
#define INNET_NC_CTR_DROPPED_UNCONFIGURED 6
#define INNET_NC_CTR_DROPPED_NOT_FOR_ME 7
#define INNET_NC_CTR_DROPPED_UNKNOWN_KEY 8
#define INNET_NC_CTR_DROPPED_NO_ROUTE 9
#define INNET_NC_CTR_DROPPED_NOT_TAIL 10
#define INNET_NC_CTR_DROPPED_UNEXPECTED 11
#define INNET_NC_CTR_DROPPED_WRITE_NOT_FROM_PREV 12
#define INNET_NC_CTR_DROPPED_WRITE_OFF_CHAIN 13
#define INNET_NC_CTR_DROPPED_MALFORMED 14 /* + INNET_NC_ERR_* */
#define INNET_NC_CTR_NODE_COUNT 18	  /* counters the Rust reference has */
#define INNET_NC_CTR_XDP_PASSED_OTHER 18 /* not NetChain traffic: XDP_PASS */
#define INNET_NC_CTR_XDP_NO_PORT 19	  /* a verdict's port has no ifindex: dropped */
#define INNET_NC_CTR_AUTH_REFUSED 20	  /* --auth-key: from a chain node without a trailer that checks */
#define INNET_NC_CTR_COUNT 21
_Static_assert(INNET_NC_CTR_DROPPED_MALFORMED + INNET_NC_ERR_COUNT == INNET_NC_CTR_NODE_COUNT, "counters");

/* Map nc_config (array, 1 entry): written by the control plane. */
struct innet_nc_config {
	__u32 role;	     /* INNET_CHAIN_ROLE_* */
	__u32 writes_paused; /* the head drops writes (recovery) */
	__u32 keys;	     /* nc_keys / nc_registers max_entries */
	__u32 udp_port;	     /* host order; INNET_NC_DEFAULT_PORT */
	__u32 addr;	     /* this node's chain address (host order, non-zero) */
	__be32 node_ip;	     /* source of Origin replies */
	__u32 origin_port;   /* chain_ports index towards the clients */
	__u32 prev;	     /* the predecessor's chain index (its writes), or INNET_CHAIN_PEER_NONE */
	__u32 tail;	     /* unused (NetChain has no ACKs); INNET_CHAIN_PEER_NONE */
	__u32 reply_port;    /* host order: replies go to the client's address at this
			      * port (INNET_NC_REPLY_PORT, the reference's); 0: to the
			      * request's source port */
	/* NcNode.successors: the addresses (host order) of the members after
	 * this node in chain order, then zeros; the stack a write must carry on. */
	__u32 successors[INNET_NC_MAX_CHAIN_NODES];
};
#define INNET_NC_CONFIG_SIZE 80
_Static_assert(sizeof(struct innet_nc_config) == INNET_NC_CONFIG_SIZE, "config size");

/* Map nc_neighbours (hash, INNET_NC_NEIGHBOURS_MAX): chain address (host
 * order) -> hop, NcNode.neighbours. */
#define INNET_NC_HOP_SKIP 0
#define INNET_NC_HOP_PORT 1
struct innet_nc_hop {
	__u16 hop;  /* INNET_NC_HOP_* */
	__u16 port; /* chain_ports index when hop == PORT */
};
#define INNET_NC_HOP_SIZE 4
_Static_assert(sizeof(struct innet_nc_hop) == INNET_NC_HOP_SIZE, "hop size");

/* Map nc_keys (array, keys entries): the exact-match key table. */
struct innet_nc_key_slot {
	__u32 valid;
	__u8 key[INNET_NC_KEY_LEN];
};
#define INNET_NC_KEY_SLOT_SIZE 20
_Static_assert(sizeof(struct innet_nc_key_slot) == INNET_NC_KEY_SLOT_SIZE, "key slot size");

/* Map nc_registers (array, keys entries): value and sequence per slot. */
struct innet_nc_register {
	__u8 value[INNET_NC_VALUE_LEN];
	__u16 seq; /* host order */
	__u16 pad;
};
#define INNET_NC_REGISTER_SIZE 20
_Static_assert(sizeof(struct innet_nc_register) == INNET_NC_REGISTER_SIZE, "register size");

#endif /* INNET_NETCHAIN_H */
