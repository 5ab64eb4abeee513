/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Maps of the transaction switch (bpf/txn_switch.bpf.c), shared with the
 * loader: crates/xdp/src/layout.rs encodes and decodes every struct below by
 * hand at these offsets and asserts every constant at compile time (modes,
 * verdicts, capacities; counter indexes against the reference's counter
 * names in a unit test), and crates/xdp/src/txn.rs's tests check each map's
 * name, entries and value size in the compiled object.
 *
 * The two tables are innet_core::table::SetAssoc laid out as BPF arrays: one
 * array element is one set of INNET_WAYS slots, so capacity in slots is
 * max_entries * INNET_WAYS. Default capacities equal innet_txn's
 * CACHE_SLOTS_DEFAULT and CLIENT_SLOTS_DEFAULT; a loader may shrink them
 * (powers of two) and must write the matching set_bits into the config.
 */
#ifndef INNET_TXN_SWITCH_H
#define INNET_TXN_SWITCH_H

#include "innet_txn.h"

#define INNET_WAYS 4
#define INNET_CACHE_SLOTS_DEFAULT 4096
#define INNET_CLIENT_SLOTS_DEFAULT 1024

/* Modes, as innet_txn::switch::Mode::id(). */
#define INNET_TXN_MODE_FORWARD 0
#define INNET_TXN_MODE_READ_CACHE 1
#define INNET_TXN_MODE_EARLY_ABORT 2
#define INNET_TXN_MODE_OPTIMISTIC_ABORT 3

/* Verdicts of the payload logic (innet_core::Verdict). */
#define INNET_VERDICT_DROP 0
#define INNET_VERDICT_UPSTREAM 1
#define INNET_VERDICT_DOWNSTREAM 2
#define INNET_VERDICT_REFLECT 3

/* Counters, in the order of SwitchCounters::counters(); then XDP-only ones. */
#define INNET_TXN_CTR_REQUESTS 0
#define INNET_TXN_CTR_RESPONSES 1
#define INNET_TXN_CTR_FORWARDED 2
#define INNET_TXN_CTR_ABORTED 3
#define INNET_TXN_CTR_OPTIMISTICALLY_ABORTED 4
#define INNET_TXN_CTR_SERVED_FROM_CACHE 5
#define INNET_TXN_CTR_CONFIRMED 6
#define INNET_TXN_CTR_PASSED_FRAGMENTED 7
#define INNET_TXN_CTR_PASSED_STORE_COMMIT 8
#define INNET_TXN_CTR_PASSED_DUPLICATE 9
#define INNET_TXN_CTR_REFUSED_DUPLICATE 10
#define INNET_TXN_CTR_REFUSED_STALE 11
#define INNET_TXN_CTR_LEARNED_REPLIES 12
#define INNET_TXN_CTR_RESETS 13
#define INNET_TXN_CTR_DROPPED_REPLY_FROM_DOWNSTREAM 14
#define INNET_TXN_CTR_UNLEARNED_REPLY_NOT_AWAITED 15
#define INNET_TXN_CTR_FORGOT_ON_UPSTREAM_SWITCH_ABORT 16
#define INNET_TXN_CTR_PASSED_UNTRACKED 17
#define INNET_TXN_CTR_DROPPED_MALFORMED 18 /* + INNET_TXN_ERR_* */
#define INNET_TXN_CTR_SWITCH_COUNT 24	   /* counters the Rust reference has */
#define INNET_TXN_CTR_XDP_PASSED_OTHER 24 /* not transaction traffic: XDP_PASS */
#define INNET_TXN_CTR_AUTH_REFUSED 25	   /* --auth-key: from the store port without a trailer that checks */
#define INNET_TXN_CTR_COUNT 26
_Static_assert(INNET_TXN_CTR_DROPPED_MALFORMED + INNET_TXN_ERR_COUNT == INNET_TXN_CTR_SWITCH_COUNT, "counter layout");

/* Map txn_config (array, 1 entry): written by the loader before attach. */
struct innet_txn_config {
	__u32 mode;		/* INNET_TXN_MODE_* */
	__u32 cache_set_bits;	/* log2(txn_cache max_entries) */
	__u32 client_set_bits;	/* log2(txn_clients max_entries) */
	__u32 udp_port;		/* host order; 9999 */
	__u32 client_ifindex;	/* port towards the clients */
	__u32 store_ifindex;	/* port towards the store */
	__be32 service_ip;	/* the address clients send to (the switch's) */
	__be32 store_ip;
	__u8 client_port_mac[6]; /* the switch's MAC on the client port */
	__u8 client_mac[6];	 /* next hop towards the clients */
	__u8 store_port_mac[6];	 /* the switch's MAC on the store port */
	__u8 store_mac[6];	 /* next hop towards the store */
};
#define INNET_TXN_CONFIG_SIZE 56
_Static_assert(sizeof(struct innet_txn_config) == INNET_TXN_CONFIG_SIZE, "config size");

/* Map txn_routes (LPM trie): where Downstream replies go, by destination
 * address. A switch with switches below it (a core over edge switches,
 * Gotthard section 3.6) has one route per client subnet; a destination no
 * route covers goes to the config's client port. */
struct innet_txn_route_key {
	__u32 prefixlen; /* bits of addr that count */
	__be32 addr;
};
struct innet_txn_route {
	__u32 ifindex;	   /* egress device */
	__u8 port_mac[6];  /* the switch's MAC on it */
	__u8 next_mac[6];  /* the next hop's MAC */
};
#define INNET_TXN_ROUTE_KEY_SIZE 8
#define INNET_TXN_ROUTE_SIZE 16
#define INNET_TXN_ROUTES_MAX 64
_Static_assert(sizeof(struct innet_txn_route_key) == INNET_TXN_ROUTE_KEY_SIZE, "route key size");
_Static_assert(sizeof(struct innet_txn_route) == INNET_TXN_ROUTE_SIZE, "route size");

/* Map txn_state (array, 1 entry): the switch's scalar registers. */
struct innet_txn_state {
	__u32 cache_clock;	/* SetAssoc clock of txn_cache */
	__u32 client_clock;	/* SetAssoc clock of txn_clients */
	__u32 generation;	/* reset generation */
	__u32 replies_learned;	/* store replies learned from */
	__u64 cache_evictions;
	__u64 client_evictions;
};
#define INNET_TXN_STATE_SIZE 32
_Static_assert(sizeof(struct innet_txn_state) == INNET_TXN_STATE_SIZE, "state size");

/* innet_txn::switch::CacheEntry */
struct innet_cache_entry {
	__u32 generation;
	__u32 learned_from;
	__u8 has_value;
	__u8 has_pending;
	__u8 opti; /* a write passed, no store ABORT withdrew it */
	__u8 pad;
	__u8 value[INNET_TXN_VALUE_LEN];
	__u8 pending[INNET_TXN_VALUE_LEN];
};

/* innet_txn::switch::ClientEntry */
struct innet_client_entry {
	__s32 req_id;
	__u8 forwarded;
	__u8 awaiting; /* 0, or request req_id - (awaiting - 1) was forwarded and its reply
			* is awaited (later requests answered by the switch keep the wait) */
	__u16 generation; /* low 16 bits of the reset generation */
	__u8 pinned; /* the switch aborted req_id, a request with writes: kept */
	__u8 pad[3];
};
/* innet_txn::switch::AWAITING_SPAN_MAX: the most `awaiting` holds */
#define INNET_AWAITING_SPAN_MAX 255

/* One SetAssoc slot: valid, key, LRU stamp, value. */
struct innet_cache_slot {
	__u32 valid;
	__u32 key;
	__u32 stamp;
	struct innet_cache_entry e;
};
struct innet_client_slot {
	__u32 valid;
	__u32 key;
	__u32 stamp;
	struct innet_client_entry e;
};

/* Map txn_cache / txn_clients (array of sets). */
struct innet_cache_set {
	struct innet_cache_slot way[INNET_WAYS];
};
struct innet_client_set {
	struct innet_client_slot way[INNET_WAYS];
};
#define INNET_CACHE_SLOT_SIZE 56
#define INNET_CLIENT_SLOT_SIZE 24
_Static_assert(sizeof(struct innet_cache_slot) == INNET_CACHE_SLOT_SIZE, "cache slot size");
_Static_assert(sizeof(struct innet_client_slot) == INNET_CLIENT_SLOT_SIZE, "client slot size");
_Static_assert(sizeof(struct innet_cache_set) == INNET_WAYS * INNET_CACHE_SLOT_SIZE, "cache set size");
_Static_assert(sizeof(struct innet_client_set) == INNET_WAYS * INNET_CLIENT_SLOT_SIZE, "client set size");

#endif /* INNET_TXN_SWITCH_H */
