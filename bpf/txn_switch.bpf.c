// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The transaction switch in XDP: Gotthard's Algorithm 2 (section 3.3) and
 * NOCC's verification offload in the four modes of innet_txn::switch, ported
 * line by line from crates/txn/src/switch.rs (the reference). Read that
 * module's essay first; comments here only say where BPF differs.
 *
 * txn_process() is the payload logic: it takes the UDP payload and returns an
 * INNET_VERDICT_*, rewriting the payload in place exactly as
 * TxnSwitch::process does. The differential test
 * (crates/xdp/tests/txn_differential.rs) compares verdicts, payload bytes,
 * counters and table contents with the Rust reference on >= 100,000 packets.
 *
 * xdp_txn_switch() wraps it in Ethernet/IPv4/UDP: Upstream rewrites to the
 * store's MAC/IP and redirects to the port towards it (the store, or the
 * next switch up); Downstream rewrites the source to the service address
 * clients sent to and redirects by the destination's route (txn_routes:
 * one per client subnet behind another switch) or else to the client port; Reflect swaps addresses and XDP_TX. Anything
 * that is not IPv4/UDP to or from the configured port passes to the kernel.
 *
 * The tables are innet_core::table::SetAssoc: 4-way sets, Fibonacci hash,
 * LRU by a per-table clock stamp, victim = first invalid way, else the way
 * with the largest (clock - stamp), the last one on ties (Rust's max_by_key).
 *
 * Concurrency: state is shared by all CPUs without locks (BPF cannot hold a
 * spin lock across map lookups). The reference is sequential; a switch
 * pipeline is too. Equivalence is exact when packets are processed one at a
 * time (BPF_PROG_TEST_RUN, one receive queue); under concurrent receive on
 * several CPUs a table update can be lost, which costs a cache miss or a
 * missed abort, never a wrong commit (the store still validates).
 *
 * With --auth-key (txn_auth on, innet_auth.h): what arrives on the store
 * port must end in a MAC trailer that checks (counted under auth_refused
 * and dropped otherwise), and is processed without it; what the switch
 * sends to the store port is sealed; what it sends towards the clients is
 * not (the reference clients cannot carry a MAC: innet_live::txn). The
 * store runs with `innet store --auth-key F` and no --downstream, so it
 * seals its replies to the clients' addresses, which come back through
 * this switch. A payload sealed here is its first INNET_TXN_MAX_PACKET_LEN
 * bytes (the Rust parser never reads past the last op).
 *
 * xdp_bounce() is the bare baseline: swap addresses of UDP to the configured
 * port and XDP_TX, no state.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "innet_auth.h"
#include "innet_txn_switch.h"
#include "innet_xdp.h"

/* Configuration from user space (mode, ports, addresses, table geometry). */
MAP(txn_config, BPF_MAP_TYPE_ARRAY, 1, struct innet_txn_config);

/* Scalar registers: table clocks, reset generation, replies learned. */
MAP(txn_state, BPF_MAP_TYPE_ARRAY, 1, struct innet_txn_state);

/* Per-key value / pending-write registers (TxnSwitch.cache). */
MAP(txn_cache, BPF_MAP_TYPE_ARRAY, INNET_CACHE_SLOTS_DEFAULT / INNET_WAYS, struct innet_cache_set);

/* Last decision per client, for duplicate detection (TxnSwitch.clients). */
MAP(txn_clients, BPF_MAP_TYPE_ARRAY, INNET_CLIENT_SLOTS_DEFAULT / INNET_WAYS, struct innet_client_set);

/* Downstream routes by destination prefix (struct innet_txn_route). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, INNET_TXN_ROUTES_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct innet_txn_route_key);
	__type(value, struct innet_txn_route);
} txn_routes SEC(".maps");

/* --auth-key (innet_auth.h): off unless the loader turns it on. */
MAP(txn_auth, BPF_MAP_TYPE_ARRAY, 1, struct innet_auth);

/* Every decision counted (INNET_TXN_CTR_*). */
MAP(txn_counters, BPF_MAP_TYPE_ARRAY, INNET_TXN_CTR_COUNT, __u64);

/* Per-CPU scratch: the UDP payload being decided. Sized for an op index
 * masked with & 7 so the verifier sees every access in bounds; only the
 * first INNET_TXN_MAX_PACKET_LEN bytes are ever loaded or stored back. */
#define SCRATCH_LEN (INNET_TXN_HEADER_LEN + 8 * INNET_TXN_OP_LEN)
struct scratch {
	__u8 buf[SCRATCH_LEN];
};
_Static_assert(SCRATCH_LEN >= INNET_TXN_MAX_PACKET_LEN, "scratch holds a packet");

MAP(txn_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, struct scratch);

static __always_inline void count(__u32 index)
{
	__u64 *c = bpf_map_lookup_elem(&txn_counters, &index);
	if (c)
		__sync_fetch_and_add(c, 1);
}

static __always_inline struct innet_txn_config *config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&txn_config, &zero);
}

static __always_inline struct innet_txn_state *state(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&txn_state, &zero);
}

static __always_inline __u8 *payload(void)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&txn_scratch, &zero);
	return s ? s->buf : 0;
}

/* ---- the payload in scratch ------------------------------------------ */

static __always_inline __u8 *op_at(__u8 *buf, __u32 i)
{
	return buf + INNET_TXN_HEADER_LEN + (i & 7) * INNET_TXN_OP_LEN;
}

static __always_inline __u8 op_type(__u8 *buf, __u32 i)
{
	return op_at(buf, i)[INNET_TXN_OFF_OP_TYPE];
}

static __always_inline __u32 op_key(__u8 *buf, __u32 i)
{
	return load_be32(op_at(buf, i) + INNET_TXN_OFF_OP_KEY);
}

static __always_inline __u8 *op_value(__u8 *buf, __u32 i)
{
	return op_at(buf, i) + INNET_TXN_OFF_OP_VALUE;
}

/* ---- SetAssoc -------------------------------------------------------- */
/* Table operations are global BPF functions: each is verified once, on its
 * own, which keeps the verifier's path count small. They name a slot by its
 * index (set * INNET_WAYS + way); -1 is "none". */

static __always_inline __u32 set_index(__u32 key, __u32 set_bits)
{
	if (set_bits == 0 || set_bits > 31)
		return 0;
	return (key * 0x9E3779B1u) >> (32 - set_bits);
}

/* The way of `set` holding `key`, or -1. */
#define SET_FIND(set_, key_)                                                                     \
	({                                                                                       \
		int found_ = -1;                                                                 \
		for (int w_ = 0; w_ < INNET_WAYS; w_++) {                                        \
			if (found_ < 0 && (set_)->way[w_].valid && (set_)->way[w_].key == (key_)) \
				found_ = w_;                                                     \
		}                                                                                \
		found_;                                                                          \
	})

/* SetAssoc::entry's victim choice: first invalid way, else the least
 * recently used (largest clock - stamp; the last such way on ties, as
 * Rust's max_by_key). */
#define SET_VICTIM(set_, clock_)                                                \
	({                                                                      \
		int victim_ = -1;                                               \
		for (int w_ = 0; w_ < INNET_WAYS; w_++) {                       \
			if (victim_ < 0 && !(set_)->way[w_].valid)              \
				victim_ = w_;                                   \
		}                                                               \
		if (victim_ < 0) {                                              \
			__u32 best_ = 0;                                        \
			victim_ = 0;                                            \
			for (int w_ = 0; w_ < INNET_WAYS; w_++) {               \
				__u32 age_ = (clock_) - (set_)->way[w_].stamp;  \
				if (w_ == 0 || age_ >= best_) {                 \
					best_ = age_;                           \
					victim_ = w_;                           \
				}                                               \
			}                                                       \
		}                                                               \
		victim_;                                                        \
	})

static __always_inline struct innet_cache_slot *cache_slot(int slot)
{
	if (slot < 0)
		return 0;
	__u32 set = (__u32)slot / INNET_WAYS;
	struct innet_cache_set *s = bpf_map_lookup_elem(&txn_cache, &set);
	return s ? &s->way[slot & (INNET_WAYS - 1)] : 0;
}

static __always_inline struct innet_client_slot *client_slot(int slot)
{
	if (slot < 0)
		return 0;
	__u32 set = (__u32)slot / INNET_WAYS;
	struct innet_client_set *s = bpf_map_lookup_elem(&txn_clients, &set);
	return s ? &s->way[slot & (INNET_WAYS - 1)] : 0;
}

/* SetAssoc::entry on set `s_`: the way holding `key_`, or else the victim
 * way, zeroed and given `key_`; it becomes the most recent. Advances the
 * table clock `*clock_`, counts a replaced valid slot in `*evictions_`.
 * -1 only where the verifier needs a bound. */
#define SET_ENTRY(s_, key_, clock_, evictions_)                                       \
	({                                                                            \
		__u32 now_ = ++*(clock_);                                             \
		int way_ = SET_FIND(s_, key_);                                        \
		if (way_ < 0) {                                                       \
			way_ = SET_VICTIM(s_, now_);                                  \
			if (way_ >= 0 && way_ < INNET_WAYS) {                         \
				if ((s_)->way[way_].valid)                            \
					(*(evictions_))++;                            \
				__builtin_memset(&(s_)->way[way_], 0, sizeof((s_)->way[way_])); \
				(s_)->way[way_].valid = 1;                            \
				(s_)->way[way_].key = (key_);                         \
			}                                                             \
		}                                                                     \
		if (way_ >= 0 && way_ < INNET_WAYS)                                   \
			(s_)->way[way_].stamp = now_;                                 \
		else                                                                  \
			way_ = -1;                                                    \
		way_;                                                                 \
	})

/* The set of `key` in the cache / client table (its index in `*set`) and
 * the state registers in `*st`; 0 if a lookup fails. */
#define SET_OF(table_map, bits_field, key_, set_, st_)                        \
	({                                                                   \
		struct innet_txn_config *cfg_ = config();                    \
		*(st_) = state();                                            \
		void *s_ = 0;                                                \
		if (cfg_ && *(st_)) {                                        \
			*(set_) = set_index(key_, cfg_->bits_field);         \
			s_ = bpf_map_lookup_elem(&table_map, set_);          \
		}                                                            \
		s_;                                                          \
	})

static __always_inline struct innet_cache_set *cache_set_of(__u32 key, __u32 *set, struct innet_txn_state **st)
{
	return SET_OF(txn_cache, cache_set_bits, key, set, st);
}

static __always_inline struct innet_client_set *client_set_of(__u32 key, __u32 *set, struct innet_txn_state **st)
{
	return SET_OF(txn_clients, client_set_bits, key, set, st);
}

/* TxnSwitch::cached: the slot of `key` if its entry is of the current
 * generation (SetAssoc::peek: recency unchanged). */
__noinline int cache_peek(__u32 key)
{
	struct innet_txn_state *st;
	__u32 set;
	struct innet_cache_set *s = cache_set_of(key, &set, &st);
	if (!s || !st)
		return -1;
	int w = SET_FIND(s, key);
	if (w < 0 || w >= INNET_WAYS || s->way[w].e.generation != st->generation)
		return -1;
	return (int)(set * INNET_WAYS + w);
}

/* TxnSwitch::entry_mut: SetAssoc::entry, then reset if of an old generation. */
__noinline int cache_entry_mut(__u32 key)
{
	struct innet_txn_state *st;
	__u32 set;
	struct innet_cache_set *s = cache_set_of(key, &set, &st);
	if (!s || !st)
		return -1;
	int w = SET_ENTRY(s, key, &st->cache_clock, &st->cache_evictions);
	if (w < 0 || w >= INNET_WAYS)
		return -1;
	struct innet_cache_entry *e = &s->way[w].e;
	if (e->generation != st->generation) {
		__builtin_memset(e, 0, sizeof(*e));
		e->generation = st->generation;
	}
	return (int)(set * INNET_WAYS + w);
}

/* SetAssoc::get_mut on the client table: a found entry becomes recent. */
__noinline int client_get(__u32 key)
{
	struct innet_txn_state *st;
	__u32 set;
	struct innet_client_set *s = client_set_of(key, &set, &st);
	if (!s || !st)
		return -1;
	int w = SET_FIND(s, key);
	if (w < 0 || w >= INNET_WAYS)
		return -1;
	s->way[w].stamp = ++st->client_clock;
	return (int)(set * INNET_WAYS + w);
}

/* switch.rs `unpinned`: way `w_` of client set `s_` may be replaced (it is
 * not a pinned slot of generation `g_`). */
#define CLIENT_UNPINNED(s_, w_, g_) (!(s_)->way[w_].e.pinned || (s_)->way[w_].e.generation != (g_))

/* SetAssoc::slot_for on a client set at clock `clock_`: the way holding
 * `key_`, else the first free one, else the least recently used unpinned
 * one (the last on ties); -1 if every way is a pinned slot of another
 * client. */
#define CLIENT_SLOT_FOR(s_, key_, clock_, g_)                                          \
	({                                                                             \
		int way_ = SET_FIND(s_, key_);                                         \
		for (int w_ = 0; w_ < INNET_WAYS; w_++) {                              \
			if (way_ < 0 && !(s_)->way[w_].valid)                          \
				way_ = w_;                                             \
		}                                                                      \
		if (way_ < 0) {                                                        \
			__u32 best_ = 0;                                               \
			for (int w_ = 0; w_ < INNET_WAYS; w_++) {                      \
				__u32 age_ = (clock_) - (s_)->way[w_].stamp;           \
				if (CLIENT_UNPINNED(s_, w_, g_) && (way_ < 0 || age_ >= best_)) { \
					best_ = age_;                                  \
					way_ = w_;                                     \
				}                                                      \
			}                                                              \
		}                                                                      \
		way_;                                                                  \
	})

/* SetAssoc::has_room with `unpinned`: 1 if `cl_id` is held or would find a
 * free or unpinned slot (recency unchanged). */
__noinline int client_room(__u32 cl_id)
{
	struct innet_txn_state *st;
	__u32 set;
	struct innet_client_set *s = client_set_of(cl_id, &set, &st);
	if (!s || !st)
		return 0;
	return CLIENT_SLOT_FOR(s, cl_id, st->client_clock, (__u16)st->generation) >= 0;
}

/* TxnSwitch::decided: SetAssoc::entry_if with `unpinned` on the client
 * table (a new slot is zeroed, as Rust's default entry); -1 (nothing
 * recorded) when the set holds only other clients' pinned slots. Forwarded,
 * the request is the one awaited; answered here, the wait for an earlier
 * one goes on. `pinned`: the switch aborted a request with writes (the
 * slot's pin then holds until a later request of the client is
 * forwarded). */
__noinline int client_decided(__u32 cl_id, __s32 req_id, __u32 forwarded, __u32 pinned)
{
	struct innet_txn_state *st;
	__u32 set;
	struct innet_client_set *s = client_set_of(cl_id, &set, &st);
	if (!s || !st)
		return -1;
	__u32 now = ++st->client_clock;
	int w = CLIENT_SLOT_FOR(s, cl_id, now, (__u16)st->generation);
	if (w < 0 || w >= INNET_WAYS)
		return -1;
	if (!s->way[w].valid || s->way[w].key != cl_id) {
		if (s->way[w].valid)
			st->client_evictions++;
		__builtin_memset(&s->way[w], 0, sizeof(s->way[w]));
		s->way[w].valid = 1;
		s->way[w].key = cl_id;
	}
	s->way[w].stamp = now;
	struct innet_client_entry *e = &s->way[w].e;
	int current = e->generation == (__u16)st->generation;
	__u8 awaiting = forwarded ? 1 : 0;
	if (!forwarded && current && e->awaiting) {
		__s32 later = (__s32)((__u32)req_id - (__u32)e->req_id);
		if (later > 0 && later <= INNET_AWAITING_SPAN_MAX - e->awaiting)
			awaiting = (__u8)(later + e->awaiting);
	}
	/* A pin holds until a later request of the client is forwarded. */
	pinned |= !forwarded && current && e->pinned;
	e->generation = (__u16)st->generation;
	e->req_id = req_id;
	e->forwarded = forwarded;
	e->awaiting = awaiting;
	e->pinned = pinned;
	return 0;
}

/* TxnSwitch::awaited: whether `req_id` of `cl_id` was forwarded and its
 * reply not learned yet; if so the switch stops waiting. */
__noinline int client_awaited(__u32 cl_id, __s32 req_id)
{
	struct innet_txn_state *st;
	__u32 set;
	struct innet_client_set *s = client_set_of(cl_id, &set, &st);
	if (!s || !st)
		return 0;
	int w = SET_FIND(s, cl_id);
	if (w < 0 || w >= INNET_WAYS)
		return 0;
	s->way[w].stamp = ++st->client_clock;
	struct innet_client_entry *e = &s->way[w].e;
	if (e->generation != (__u16)st->generation || !e->awaiting ||
	    (__s32)((__u32)e->req_id - (__u32)(e->awaiting - 1)) != req_id)
		return 0;
	e->awaiting = 0;
	return 1;
}

/* ---- Algorithm 2 ----------------------------------------------------- */

/* innet_wire::txn::validate: INNET_TXN_ERR_* or -1 if valid. */
static __always_inline int validate(__u8 *buf, __u32 len)
{
	if (len < INNET_TXN_HEADER_LEN)
		return INNET_TXN_ERR_TRUNCATED;
	__u32 n = buf[INNET_TXN_OFF_OP_CNT];
	if (n > INNET_TXN_MAX_OPS_PER_PACKET)
		return INNET_TXN_ERR_TOO_MANY_OPS;
	if (len < INNET_TXN_HEADER_LEN + n * INNET_TXN_OP_LEN)
		return INNET_TXN_ERR_OPS_BEYOND_PACKET;
	if (buf[INNET_TXN_OFF_STATUS] > INNET_TXN_STATUS_MAX)
		return INNET_TXN_ERR_UNKNOWN_STATUS;
	__u8 seq = buf[INNET_TXN_OFF_FRAG_SEQ], cnt = buf[INNET_TXN_OFF_FRAG_CNT];
	if (cnt > 1 && (seq == 0 || seq > cnt))
		return INNET_TXN_ERR_BAD_FRAGMENT;
	for (__u32 i = 0; i < INNET_TXN_MAX_OPS_PER_PACKET && i < n; i++) {
		if (op_type(buf, i) > INNET_TXN_OP_MAX)
			return INNET_TXN_ERR_UNKNOWN_OP_TYPE;
	}
	return -1;
}

static __always_inline __u32 hdr_cl_id(__u8 *buf)
{
	return load_be32(buf + INNET_TXN_OFF_CL_ID);
}

static __always_inline __s32 hdr_req_id(__u8 *buf)
{
	return (__s32)load_be32(buf + INNET_TXN_OFF_REQ_ID);
}

/* SetAssoc::remove on the cache: the way holding `key` becomes invalid. */
__noinline int cache_remove(__u32 key)
{
	struct innet_txn_state *st;
	__u32 set;
	struct innet_cache_set *s = cache_set_of(key, &set, &st);
	if (!s || !st)
		return -1;
	int w = SET_FIND(s, key);
	if (w < 0 || w >= INNET_WAYS)
		return -1;
	s->way[w].valid = 0;
	return 0;
}

/* TxnSwitch::forget_keys_of: an awaited abort an upstream switch built
 * passes; every key its VALUE and NOP ops name is forgotten (its pending
 * write will never reach the store; its corrections are not learned). */
__noinline int forget_keys_of(__u32 n)
{
	__u8 *buf = payload();
	if (!buf)
		return -1;
	count(INNET_TXN_CTR_FORGOT_ON_UPSTREAM_SWITCH_ABORT);
	for (__u32 i = 0; i < INNET_TXN_MAX_OPS_PER_PACKET && i < n; i++) {
		__u8 kind = op_type(buf, i);
		if (kind == INNET_TXN_OP_VALUE || kind == INNET_TXN_OP_NOP)
			cache_remove(op_key(buf, i));
	}
	return 0;
}

__noinline int handle_response(__u32 n, __u32 from_upstream)
{
	__u8 *buf = payload();
	struct innet_txn_config *cfg = config();
	struct innet_txn_state *st = state();
	if (!buf || !cfg || !st)
		return INNET_VERDICT_DROP;
	count(INNET_TXN_CTR_RESPONSES);
	if (!from_upstream) {
		/* Replies come from the store side; one from a client is forged. */
		count(INNET_TXN_CTR_DROPPED_REPLY_FROM_DOWNSTREAM);
		return INNET_VERDICT_DROP;
	}
	__u8 status = buf[INNET_TXN_OFF_STATUS];
	int aborted = status == INNET_TXN_STATUS_ABORT || status == INNET_TXN_STATUS_OPTIMISTIC_ABORT;
	int from_switch = buf[INNET_TXN_OFF_FLAGS] & INNET_TXN_FLAG_FROM_SWITCH;
	/* An abort an upstream switch built is acted on too (below); its OK
	 * teaches nothing. */
	int learn = cfg->mode != INNET_TXN_MODE_FORWARD && buf[INNET_TXN_OFF_FRAG_CNT] <= 1 &&
		    status <= INNET_TXN_STATUS_OPTIMISTIC_ABORT && (!from_switch || aborted);
	if (!learn)
		return INNET_VERDICT_DOWNSTREAM;
	if (!client_awaited(hdr_cl_id(buf), hdr_req_id(buf))) {
		count(INNET_TXN_CTR_UNLEARNED_REPLY_NOT_AWAITED);
		return INNET_VERDICT_DOWNSTREAM;
	}
	if (from_switch) {
		forget_keys_of(n);
		return INNET_VERDICT_DOWNSTREAM;
	}
	count(INNET_TXN_CTR_LEARNED_REPLIES);
	__u32 reply = ++st->replies_learned;
	for (__u32 i = 0; i < INNET_TXN_MAX_OPS_PER_PACKET && i < n; i++) {
		__u8 kind = op_type(buf, i);
		if (kind != INNET_TXN_OP_VALUE && kind != INNET_TXN_OP_UPDATED)
			continue;
		struct value v = value_load(op_value(buf, i));
		struct innet_cache_slot *slot = cache_slot(cache_entry_mut(op_key(buf, i)));
		if (!slot)
			continue;
		struct innet_cache_entry *e = &slot->e;
		e->has_value = 1;
		value_store(e->value, v);
		e->learned_from = reply;
		int confirmed = kind == INNET_TXN_OP_UPDATED && e->has_pending && value_eq(value_load(e->pending), v);
		if (aborted || confirmed)
			e->has_pending = 0;
		if (aborted)
			e->opti = 0;
	}
	if ((buf[INNET_TXN_OFF_FLAGS] & INNET_TXN_FLAG_RESET) && status == INNET_TXN_STATUS_OK) {
		/* The store cleared itself: so does the switch (by generation). */
		st->generation++;
		count(INNET_TXN_CTR_RESETS);
	}
	return INNET_VERDICT_DOWNSTREAM;
}

static __always_inline int forward(__u8 *buf)
{
	client_decided(hdr_cl_id(buf), hdr_req_id(buf), 1, 0);
	count(INNET_TXN_CTR_FORWARDED);
	return INNET_VERDICT_UPSTREAM;
}

/* TxnPacket::make_switch_reply. */
static __always_inline int switch_reply(__u8 *buf, __u8 status)
{
	buf[INNET_TXN_OFF_FLAGS] |= INNET_TXN_FLAG_RESPONSE | INNET_TXN_FLAG_FROM_SWITCH;
	buf[INNET_TXN_OFF_STATUS] = status;
	buf[INNET_TXN_OFF_FRAG_SEQ] = 1;
	buf[INNET_TXN_OFF_FRAG_CNT] = 1;
	return INNET_VERDICT_REFLECT;
}

/* TxnPacket::make_switch_reply, then remember the answer (`pinned`: an
 * abort of a request with writes). */
static __always_inline int reflect(__u8 *buf, __u8 status, __u32 pinned)
{
	switch_reply(buf, status);
	client_decided(hdr_cl_id(buf), hdr_req_id(buf), 0, pinned);
	return INNET_VERDICT_REFLECT;
}

/* TxnSwitch::snapshot_ok: the cached values of the ops of `kind` are all
 * learned from the store, none pending, all from one reply. */
__noinline int snapshot_ok(__u32 kind, __u32 n)
{
	__u8 *buf = payload();
	if (!buf)
		return 0;
	__u32 first = 0;
	int have_first = 0;
	for (__u32 i = 0; i < INNET_TXN_MAX_OPS_PER_PACKET && i < n; i++) {
		if (op_type(buf, i) != kind)
			continue;
		struct innet_cache_slot *slot = cache_slot(cache_peek(op_key(buf, i)));
		if (!slot)
			return 0;
		struct innet_cache_entry *e = &slot->e;
		if (!e->has_value || e->has_pending || (have_first && first != e->learned_from))
			return 0;
		first = e->learned_from;
		have_first = 1;
	}
	return have_first;
}

__noinline int read_cache(__u32 n)
{
	__u8 *buf = payload();
	if (!buf)
		return INNET_VERDICT_DROP;
	int all_reads = n > 0;
	for (__u32 i = 0; i < INNET_TXN_MAX_OPS_PER_PACKET && i < n; i++) {
		if (op_type(buf, i) != INNET_TXN_OP_READ)
			all_reads = 0;
	}
	if (!all_reads || !snapshot_ok(INNET_TXN_OP_READ, n))
		return forward(buf);
	for (__u32 i = 0; i < INNET_TXN_MAX_OPS_PER_PACKET && i < n; i++) {
		struct innet_cache_slot *slot = cache_slot(cache_peek(op_key(buf, i)));
		if (!slot)
			break; /* unreachable: checked by snapshot_ok */
		op_at(buf, i)[INNET_TXN_OFF_OP_TYPE] = INNET_TXN_OP_VALUE;
		value_store(op_value(buf, i), value_load(slot->e.value));
	}
	count(INNET_TXN_CTR_SERVED_FROM_CACHE);
	return reflect(buf, INNET_TXN_STATUS_OK, 0);
}

/* Pass 1 for one VALUE op: 0 ok, 1 bad against the store's value, 2 bad
 * against a pending write, 3 miss; the correction goes to `out`. */
#define CHECK_OK 0
#define CHECK_BAD 1
#define CHECK_BAD_PENDING 2
#define CHECK_MISS 3
#define CHECK_BAD_OPTI 4 /* bad against the store's value of a key a write passed */

__noinline int check_compare(__u32 i, __u32 optimistic)
{
	__u8 *buf = payload();
	if (!buf)
		return CHECK_MISS;
	struct innet_cache_slot *slot = cache_slot(cache_peek(op_key(buf, i)));
	if (!slot)
		return CHECK_MISS;
	struct innet_cache_entry *e = &slot->e;
	struct value v = value_load(op_value(buf, i));
	if (optimistic && e->has_pending)
		return value_eq(v, value_load(e->pending)) ? CHECK_OK : CHECK_BAD_PENDING;
	if (e->has_value) {
		if (value_eq(v, value_load(e->value)))
			return CHECK_OK;
		/* Optimistic once a write passed here, as the reference. */
		return optimistic && e->opti ? CHECK_BAD_OPTI : CHECK_BAD;
	}
	return CHECK_MISS;
}

__noinline int validate_compares(__u32 n, __u32 optimistic)
{
	__u8 *buf = payload();
	if (!buf)
		return INNET_VERDICT_DROP;
	__u8 checks[INNET_TXN_MAX_OPS_PER_PACKET + 1] = {};
	int miss = 0, bad = 0, bad_pending = 0, only_values = n > 0, writes = 0;
	/* Pass 1: check every compare, rewrite nothing (NOCC section 3). */
	for (__u32 i = 0; i < INNET_TXN_MAX_OPS_PER_PACKET && i < n; i++) {
		__u8 kind = op_type(buf, i);
		writes |= kind == INNET_TXN_OP_WRITE;
		if (kind != INNET_TXN_OP_VALUE) {
			only_values &= kind == INNET_TXN_OP_NOP || kind == INNET_TXN_OP_CPU_PCT;
			continue;
		}
		int r = check_compare(i, optimistic);
		checks[i & 7] = r;
		miss |= r == CHECK_MISS;
		bad |= r == CHECK_BAD || r == CHECK_BAD_PENDING || r == CHECK_BAD_OPTI;
		bad_pending |= r == CHECK_BAD_PENDING || r == CHECK_BAD_OPTI;
	}
	/* Pass 2: abort with corrections, confirm, or record writes and forward. */
	if (bad && !miss) {
		for (__u32 i = 0; i < INNET_TXN_MAX_OPS_PER_PACKET && i < n; i++) {
			__u8 r = checks[i & 7];
			if (r == CHECK_BAD || r == CHECK_BAD_PENDING || r == CHECK_BAD_OPTI) {
				/* The table is unchanged since pass 1: peek again. */
				struct innet_cache_slot *slot = cache_slot(cache_peek(op_key(buf, i)));
				if (!slot)
					continue;
				value_store(op_value(buf, i),
					    value_load(r == CHECK_BAD_PENDING ? slot->e.pending : slot->e.value));
			} else if (op_type(buf, i) != INNET_TXN_OP_VALUE) {
				op_at(buf, i)[INNET_TXN_OFF_OP_TYPE] = INNET_TXN_OP_NOP;
			}
		}
		if (bad_pending) {
			count(INNET_TXN_CTR_OPTIMISTICALLY_ABORTED);
			return reflect(buf, INNET_TXN_STATUS_OPTIMISTIC_ABORT, writes);
		}
		count(INNET_TXN_CTR_ABORTED);
		return reflect(buf, INNET_TXN_STATUS_ABORT, writes);
	}
	if (only_values && !miss && snapshot_ok(INNET_TXN_OP_VALUE, n)) {
		count(INNET_TXN_CTR_CONFIRMED);
		return reflect(buf, INNET_TXN_STATUS_OK, 0);
	}
	if (optimistic) {
		for (__u32 i = 0; i < INNET_TXN_MAX_OPS_PER_PACKET && i < n; i++) {
			if (op_type(buf, i) != INNET_TXN_OP_WRITE)
				continue;
			struct value v = value_load(op_value(buf, i));
			struct innet_cache_slot *slot = cache_slot(cache_entry_mut(op_key(buf, i)));
			if (!slot)
				continue;
			slot->e.has_pending = 1;
			slot->e.opti = 1;
			value_store(slot->e.pending, v);
		}
	}
	return forward(buf);
}

/* TxnSwitch::process_from on the payload in txn_scratch, `len` bytes long;
 * `from_upstream` says whether it arrived on the port towards the store. */
__noinline int txn_process(__u32 len, __u32 from_upstream)
{
	__u8 *buf = payload();
	struct innet_txn_config *cfg = config();
	struct innet_txn_state *st = state();
	if (!buf || !cfg || !st)
		return INNET_VERDICT_DROP;
	int err = validate(buf, len);
	if (err >= 0) {
		count(INNET_TXN_CTR_DROPPED_MALFORMED + (__u32)err);
		return INNET_VERDICT_DROP;
	}
	__u32 n = buf[INNET_TXN_OFF_OP_CNT];
	__u8 flags = buf[INNET_TXN_OFF_FLAGS];
	if (flags & INNET_TXN_FLAG_RESPONSE)
		return handle_response(n, from_upstream);
	count(INNET_TXN_CTR_REQUESTS);
	__u32 mode = cfg->mode;
	if (mode == INNET_TXN_MODE_FORWARD) {
		count(INNET_TXN_CTR_FORWARDED);
		return INNET_VERDICT_UPSTREAM;
	}
	if (buf[INNET_TXN_OFF_FRAG_CNT] > 1) {
		/* Section 4: a fragment cannot be judged without the whole transaction. */
		count(INNET_TXN_CTR_PASSED_FRAGMENTED);
		count(INNET_TXN_CTR_FORWARDED);
		return INNET_VERDICT_UPSTREAM;
	}
	if (flags & INNET_TXN_FLAG_RESET)
		return forward(buf); /* the store judges it; its OK clears us */
	/* Duplicate detection (deviation 1 in switch.rs). */
	struct innet_client_slot *last = client_slot(client_get(hdr_cl_id(buf)));
	if (last && last->e.generation != (__u16)st->generation)
		last = 0;
	if (flags & INNET_TXN_FLAG_STORE_COMMIT) {
		/* TxnSwitch::store_commit: a resend never makes the switch wait again. */
		__s32 req_id = hdr_req_id(buf);
		if (last && (__s32)((__u32)req_id - (__u32)last->e.req_id) < 0) {
			count(INNET_TXN_CTR_REFUSED_STALE);
			return switch_reply(buf, INNET_TXN_STATUS_BAD_REQUEST);
		}
		if (last && req_id == last->e.req_id && !last->e.forwarded) {
			count(INNET_TXN_CTR_REFUSED_DUPLICATE);
			return switch_reply(buf, INNET_TXN_STATUS_BAD_REQUEST);
		}
		count(INNET_TXN_CTR_PASSED_STORE_COMMIT);
		if (last && req_id == last->e.req_id && last->e.forwarded) {
			count(INNET_TXN_CTR_FORWARDED);
			return INNET_VERDICT_UPSTREAM;
		}
		return forward(buf);
	}
	if (last) {
		__s32 req_id = hdr_req_id(buf);
		if (req_id == last->e.req_id) {
			if (last->e.forwarded) {
				count(INNET_TXN_CTR_PASSED_DUPLICATE);
				count(INNET_TXN_CTR_FORWARDED);
				return INNET_VERDICT_UPSTREAM;
			}
			count(INNET_TXN_CTR_REFUSED_DUPLICATE);
			return switch_reply(buf, INNET_TXN_STATUS_BAD_REQUEST);
		}
		if ((__s32)((__u32)req_id - (__u32)last->e.req_id) < 0) {
			count(INNET_TXN_CTR_REFUSED_STALE);
			return switch_reply(buf, INNET_TXN_STATUS_BAD_REQUEST);
		}
	}
	if (!client_room(hdr_cl_id(buf))) {
		/* Pinned slots (deviation 4): a client the switch could not remember is not judged. */
		count(INNET_TXN_CTR_PASSED_UNTRACKED);
		count(INNET_TXN_CTR_FORWARDED);
		return INNET_VERDICT_UPSTREAM;
	}
	if (mode == INNET_TXN_MODE_READ_CACHE)
		return read_cache(n);
	return validate_compares(n, mode == INNET_TXN_MODE_OPTIMISTIC_ABORT);
}

/* Words of the longest message the switch seals or opens. */
#define AUTH_MAX_WORDS ((INNET_TXN_MAX_PACKET_LEN + 7) / 8)
_Static_assert(8 * AUTH_MAX_WORDS + 8 <= SCRATCH_LEN, "innet_siphash_id reads within scratch");

/* --auth-key: the keys, if on. */
static __always_inline struct innet_auth *auth_keys(void)
{
	__u32 zero = 0;
	struct innet_auth *a = bpf_map_lookup_elem(&txn_auth, &zero);
	return a && a->on ? a : 0;
}

/* Makes the frame's UDP payload (at `offset`) `len` bytes long, fixing the
 * IPv4 and UDP lengths and the IPv4 checksum; 0 if it cannot. */
static __always_inline int set_payload_len(struct xdp_md *ctx, __u32 port, __u32 offset, __u32 len)
{
	int delta = (int)(offset + len) - (int)(ctx->data_end - ctx->data);
	if (delta != 0 && bpf_xdp_adjust_tail(ctx, delta) < 0)
		return 0;
	struct l234 l;
	if (!parse_l234(ctx, port, &l))
		return 0;
	l.ip->tot_len = bpf_htons((__u16)(sizeof(struct iphdr) + sizeof(struct udphdr) + len));
	l.udp->len = bpf_htons((__u16)(sizeof(struct udphdr) + len));
	ip_checksum(l.ip);
	return 1;
}

/* The payload's first `len` bytes (in scratch, at `offset` in the frame)
 * followed by their trailer under the sealing key. */
static __always_inline int seal_payload(struct xdp_md *ctx, struct innet_auth *a, __u32 port, __u32 offset,
					 const __u8 *buf, __u32 len)
{
	__u8 trailer[INNET_AUTH_TRAILER_LEN];
	innet_auth_seal_bytes(a, buf, len, AUTH_MAX_WORDS, trailer);
	if (!set_payload_len(ctx, port, offset, len + INNET_AUTH_TRAILER_LEN))
		return 0;
	return bpf_xdp_store_bytes(ctx, offset + len, trailer, INNET_AUTH_TRAILER_LEN) == 0;
}

SEC("xdp")
int xdp_txn_switch(struct xdp_md *ctx)
{
	struct innet_txn_config *cfg = config();
	__u8 *buf = payload();
	if (!cfg || !buf)
		return XDP_PASS;
	struct l234 l;
	if (!parse_l234(ctx, cfg->udp_port, &l)) {
		count(INNET_TXN_CTR_XDP_PASSED_OTHER);
		return XDP_PASS;
	}
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 offset = (__u32)((void *)(l.udp + 1) - data);
	__u32 len = udp_payload_len(&l, end);
	__u32 from_store = ctx->ingress_ifindex == cfg->store_ifindex;
	struct innet_auth *auth = auth_keys();
	if (auth && from_store) {
		/* The store's packets end in a trailer: checked below, then off. */
		__u8 trailer[INNET_AUTH_TRAILER_LEN];
		if (len < INNET_AUTH_TRAILER_LEN || len - INNET_AUTH_TRAILER_LEN > INNET_TXN_MAX_PACKET_LEN ||
		    bpf_xdp_load_bytes(ctx, offset + len - INNET_AUTH_TRAILER_LEN, trailer, INNET_AUTH_TRAILER_LEN) < 0) {
			count(INNET_TXN_CTR_AUTH_REFUSED);
			return XDP_DROP;
		}
		len -= INNET_AUTH_TRAILER_LEN;
		barrier_var(len);
		if (len > INNET_TXN_MAX_PACKET_LEN || (len > 0 && bpf_xdp_load_bytes(ctx, offset, buf, len) < 0) ||
		    !innet_auth_open_bytes(auth, buf, len, AUTH_MAX_WORDS, trailer)) {
			count(INNET_TXN_CTR_AUTH_REFUSED);
			return XDP_DROP;
		}
	}
	/* Bytes past the last op are never read (as the Rust parser): copy at
	 * most one maximal packet into scratch (a sealed one is there already),
	 * and back. */
	__u32 copy = len < INNET_TXN_MAX_PACKET_LEN ? len : INNET_TXN_MAX_PACKET_LEN;
	barrier_var(copy); /* keep clang from folding the bound check below */
	if (!(auth && from_store) && copy > 0 && copy <= INNET_TXN_MAX_PACKET_LEN &&
	    bpf_xdp_load_bytes(ctx, offset, buf, copy) < 0)
		return XDP_PASS;
	int verdict = txn_process(len, from_store);
	if (verdict == INNET_VERDICT_DROP)
		return XDP_DROP;
	barrier_var(copy);
	if (copy > 0 && copy <= INNET_TXN_MAX_PACKET_LEN && bpf_xdp_store_bytes(ctx, offset, buf, copy) < 0)
		return XDP_DROP;
	if (auth) {
		/* Sealed towards the store, bare towards the clients. */
		int to_store = verdict == INNET_VERDICT_UPSTREAM || (verdict == INNET_VERDICT_REFLECT && from_store);
		if (to_store && !seal_payload(ctx, auth, cfg->udp_port, offset, buf, copy))
			return XDP_DROP;
		if (!to_store && from_store && !set_payload_len(ctx, cfg->udp_port, offset, copy))
			return XDP_DROP;
	}
	/* Headers again: the helpers invalidated packet pointers. */
	if (!parse_l234(ctx, cfg->udp_port, &l))
		return XDP_DROP;
	l.udp->check = 0; /* optional in IPv4; the payload may have changed */
	switch (verdict) {
	case INNET_VERDICT_REFLECT:
		swap_addresses(&l);
		return XDP_TX;
	case INNET_VERDICT_UPSTREAM:
		__builtin_memcpy(l.eth->h_source, cfg->store_port_mac, ETH_ALEN);
		__builtin_memcpy(l.eth->h_dest, cfg->store_mac, ETH_ALEN);
		l.ip->daddr = cfg->store_ip;
		ip_checksum(l.ip);
		return out_port(ctx, cfg->store_ifindex);
	case INNET_VERDICT_DOWNSTREAM: {
		struct innet_txn_route_key rk = { .prefixlen = 32, .addr = l.ip->daddr };
		struct innet_txn_route *r = bpf_map_lookup_elem(&txn_routes, &rk);
		l.ip->saddr = cfg->service_ip;
		ip_checksum(l.ip);
		if (r) {
			__builtin_memcpy(l.eth->h_source, r->port_mac, ETH_ALEN);
			__builtin_memcpy(l.eth->h_dest, r->next_mac, ETH_ALEN);
			return out_port(ctx, r->ifindex);
		}
		__builtin_memcpy(l.eth->h_source, cfg->client_port_mac, ETH_ALEN);
		__builtin_memcpy(l.eth->h_dest, cfg->client_mac, ETH_ALEN);
		return out_port(ctx, cfg->client_ifindex);
	}
	default:
		return XDP_DROP;
	}
}

SEC("xdp")
int xdp_bounce(struct xdp_md *ctx)
{
	struct innet_txn_config *cfg = config();
	if (!cfg)
		return XDP_PASS;
	struct l234 l;
	if (!parse_l234(ctx, cfg->udp_port, &l))
		return XDP_PASS;
	l.udp->check = 0;
	swap_addresses(&l);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
