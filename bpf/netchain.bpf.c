// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The NetChain node in XDP (Jin et al., NSDI 2018, sections 4-5) as
 * crates/chain/src/netchain.rs (the reference) runs it: the head sequences
 * writes, the others apply newer sequence numbers (serial arithmetic, RFC
 * 1982) and drop older ones, a write is applied only if the rest of its
 * stack is the rest of the chain, each node pops its address and the
 * addresses of removed nodes (Hop::Skip), the tail answers the origin (at
 * config.reply_port, the reference's 8889, when set). Read that module's essay first;
 * comments here only say where BPF differs.
 *
 * nc_process() is NcNode::process_len on a copy of the payload in a per-CPU
 * scratch map (the stack's depth makes every offset variable; masked
 * offsets into scratch keep the verifier content). It returns the verdict
 * and how many stack entries were popped (a write reply loses all of
 * them). Popping shrinks the packet at its front, as NcPacket::pop: the
 * payload is written back, the Ethernet / IPv4 /
 * UDP headers are moved forward by 4 bytes per pop (bpf_xdp_adjust_head),
 * and bytes after the fixed part are cut (bpf_xdp_adjust_tail), since the
 * reference's packet length is the parsed length. IPv4 and UDP lengths
 * follow. Under --auth-key (innet_chain_node.h) a frame from a chain node
 * is opened first, and the packet that leaves is sized for its trailer and
 * sealed when it goes to the next node.
 *
 * The differential test (crates/xdp/tests/chain_differential.rs) holds it to
 * the reference: verdict, output bytes and length, counters, nc_registers.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "innet_netchain.h"
#include "innet_xdp.h"
#define CHAIN_CTR_COUNT INNET_NC_CTR_COUNT
#define CHAIN_CTR_XDP_NO_PORT INNET_NC_CTR_XDP_NO_PORT
#define CHAIN_CTR_AUTH_REFUSED INNET_NC_CTR_AUTH_REFUSED
#include "innet_chain_node.h"

/* Role, pause flag, this node's address, key capacity, the members after
 * it (control plane). */
MAP(nc_config, BPF_MAP_TYPE_ARRAY, 1, struct innet_nc_config);

/* Where each next address goes (NcNode.neighbours): a hash map by address,
 * since the reference keeps addresses unique and looks them up exactly. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, INNET_NC_NEIGHBOURS_MAX);
	__type(key, __u32);
	__type(value, struct innet_nc_hop);
} nc_neighbours SEC(".maps");

/* The exact-match key table (control plane) and the registers it indexes. */
MAP(nc_keys, BPF_MAP_TYPE_ARRAY, INNET_NC_KEYS_DEFAULT, struct innet_nc_key_slot);
MAP(nc_registers, BPF_MAP_TYPE_ARRAY, INNET_NC_KEYS_DEFAULT, struct innet_nc_register);

/* Per-CPU scratch: the payload being decided, at most INNET_NC_MAX_LEN
 * bytes. Offsets are masked with SCRATCH_MASK; the slack after the mask
 * keeps a 16-byte access at any masked offset in bounds. */
#define SCRATCH_MASK 127
struct scratch {
	__u8 buf[SCRATCH_MASK + 1 + INNET_NC_KEY_LEN];
};
_Static_assert(SCRATCH_MASK + 1 >= INNET_NC_MAX_LEN, "scratch holds a packet");
MAP(nc_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, struct scratch);

#define AT(buf, off) ((buf) + ((off) & SCRATCH_MASK))

static __always_inline struct innet_nc_config *config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&nc_config, &zero);
}

/* NcPacket's validate: the stack's entries (addresses and terminator; 0
 * for a stackless write reply), or -1 - INNET_NC_ERR_*. */
static __always_inline int nc_validate(__u8 *buf, __u32 len)
{
	if (len == INNET_NC_FIXED_LEN) {
		__u8 op = *AT(buf, INNET_NC_OFF_OP);
		if (op < INNET_NC_OP_READ_REQ || op > INNET_NC_OP_WRITE_REPLY)
			return -1 - INNET_NC_ERR_UNKNOWN_OP;
		if (op != INNET_NC_OP_WRITE_REPLY || *AT(buf, INNET_NC_OFF_SC) != 0)
			return -1 - INNET_NC_ERR_CHAIN_COUNT_MISMATCH;
		return 0;
	}
	int depth = -1;
	for (__u32 i = 0; i <= INNET_NC_MAX_CHAIN_NODES; i++) {
		if (len < (i + 1) * INNET_NC_ADDR_LEN)
			return -1 - INNET_NC_ERR_TRUNCATED;
		if (load_be32(AT(buf, i * INNET_NC_ADDR_LEN)) == 0) {
			depth = (int)i;
			break;
		}
	}
	if (depth < 0)
		return -1 - INNET_NC_ERR_CHAIN_TOO_LONG;
	__u32 entries = (__u32)depth + 1;
	__u32 fixed = entries * INNET_NC_ADDR_LEN;
	if (len < fixed + INNET_NC_FIXED_LEN)
		return -1 - INNET_NC_ERR_TRUNCATED;
	__u8 op = *AT(buf, fixed + INNET_NC_OFF_OP);
	if (op < INNET_NC_OP_READ_REQ || op > INNET_NC_OP_WRITE_REPLY)
		return -1 - INNET_NC_ERR_UNKNOWN_OP;
	if (op == INNET_NC_OP_WRITE_REPLY || *AT(buf, fixed + INNET_NC_OFF_SC) != entries)
		return -1 - INNET_NC_ERR_CHAIN_COUNT_MISMATCH;
	return (int)entries;
}

/* FNV-1a, as the reference's key_hash. */
static __always_inline __u32 key_hash(const __u8 *key)
{
	__u32 h = 0x811c9dc5u;
#pragma unroll
	for (int i = 0; i < INNET_NC_KEY_LEN; i++)
		h = (h ^ key[i]) * 0x01000193u;
	return h;
}

/* NcNode::find_key: the slot holding `key`, or -1 (linear probing, stops at
 * the first free slot). */
static __always_inline int find_key(const __u8 *key, __u32 slots)
{
	if (slots == 0)
		return -1;
	__u32 start = key_hash(key) % slots;
	struct value want = value_load(key);
	for (__u32 probe = 0; probe < INNET_NC_KEY_PROBES; probe++) {
		if (probe >= slots)
			break;
		__u32 i = (start + probe) % slots;
		struct innet_nc_key_slot *s = bpf_map_lookup_elem(&nc_keys, &i);
		if (!s || !s->valid)
			break;
		if (value_eq(value_load(s->key), want))
			return (int)i;
	}
	return -1;
}

static __always_inline int is_tail(__u32 role)
{
	return role == INNET_CHAIN_ROLE_TAIL || role == INNET_CHAIN_ROLE_HEAD_TAIL;
}

static __always_inline int is_head(__u32 role)
{
	return role == INNET_CHAIN_ROLE_HEAD || role == INNET_CHAIN_ROLE_HEAD_TAIL;
}

static __always_inline __u16 load_be16(const __u8 *p)
{
	return (__u16)(((__u16)p[0] << 8) | p[1]);
}

static __always_inline void store_be16(__u8 *p, __u16 v)
{
	p[0] = (__u8)(v >> 8);
	p[1] = (__u8)v;
}

/* NcNode::write on register `r`; 0 if the write is dropped. */
static __always_inline int nc_write(__u8 *f, struct innet_nc_register *r, struct innet_nc_config *cfg)
{
	__u8 *seq = f + INNET_NC_OFF_SEQ;
	if (is_head(cfg->role)) {
		if (cfg->writes_paused) {
			count(INNET_NC_CTR_WRITES_DROPPED_PAUSED);
			return 0;
		}
		r->seq++;
		__builtin_memcpy(r->value, f + INNET_NC_OFF_VALUE, INNET_NC_VALUE_LEN);
		store_be16(seq, r->seq);
		count(INNET_NC_CTR_WRITES_SEQUENCED);
		return 1;
	}
	__u16 d = (__u16)(load_be16(seq) - r->seq);
	if (d == 0 || d >= 0x8000) {
		count(INNET_NC_CTR_WRITES_STALE);
		return 0;
	}
	r->seq = load_be16(seq);
	__builtin_memcpy(r->value, f + INNET_NC_OFF_VALUE, INNET_NC_VALUE_LEN);
	count(INNET_NC_CTR_WRITES_APPLIED);
	return 1;
}

/* NcNode::next_hop's outcomes besides a port. */
#define NC_NEXT_END (-1)
#define NC_NEXT_NO_ROUTE (-2)

/* NcNode::next_hop: pops this node and removed nodes (`*pops` addresses in
 * all); the port of the next address, NC_NEXT_END or NC_NEXT_NO_ROUTE. */
static __always_inline int nc_next_hop(__u8 *buf, __u32 depth, __u32 *pops)
{
	*pops = 1;
	for (__u32 hop = 0; hop < INNET_NC_MAX_CHAIN_NODES; hop++) {
		if (*pops >= depth)
			break;
		__u32 addr = load_be32(AT(buf, *pops * INNET_NC_ADDR_LEN));
		struct innet_nc_hop *h = bpf_map_lookup_elem(&nc_neighbours, &addr);
		if (!h)
			return NC_NEXT_NO_ROUTE;
		if (h->hop == INNET_NC_HOP_PORT)
			return h->port;
		(*pops)++;
	}
	return NC_NEXT_END;
}

/* NcNode::stack_follows_chain on the addresses from index `pops` on. */
static __always_inline int nc_stack_follows_chain(__u8 *buf, __u32 depth, __u32 pops, struct innet_nc_config *cfg)
{
	__u32 k = 0;
	for (__u32 i = 0; i < INNET_NC_MAX_CHAIN_NODES; i++) {
		if (pops + i >= depth)
			break;
		__u32 addr = load_be32(AT(buf, (pops + i) * INNET_NC_ADDR_LEN));
		struct innet_nc_hop *h = bpf_map_lookup_elem(&nc_neighbours, &addr);
		if (!h)
			return 0;
		if (h->hop != INNET_NC_HOP_PORT)
			continue;
		if (k >= INNET_NC_MAX_CHAIN_NODES || cfg->successors[k] != addr)
			return 0;
		k++;
	}
	return k >= INNET_NC_MAX_CHAIN_NODES || cfg->successors[k] == 0;
}

/* NcNode::answer: the tail's reply; a write pops every entry left (the
 * reply is stackless), a read keeps them. `*pops` counts this node's too. */
static __always_inline int nc_answer(__u8 *f, __u32 depth, struct innet_nc_register *r, __u32 *pops)
{
	if (f[INNET_NC_OFF_OP] == INNET_NC_OP_WRITE_REQ) {
		f[INNET_NC_OFF_OP] = INNET_NC_OP_WRITE_REPLY;
		*pops = depth + 1;
	} else {
		__builtin_memcpy(f + INNET_NC_OFF_VALUE, r->value, INNET_NC_VALUE_LEN);
		store_be16(f + INNET_NC_OFF_SEQ, r->seq);
		f[INNET_NC_OFF_OP] = INNET_NC_OP_READ_REPLY;
		count(INNET_NC_CTR_READS_ANSWERED);
	}
	return INNET_CHAIN_VERDICT_ORIGIN;
}

/* NcNode::decide, after the checks of nc_process: `depth` addresses before
 * the terminator; the tail answers once it has popped itself, any other
 * node goes to the hop of the next address. `*pops` is how many entries
 * went. */
static __always_inline int nc_decide(__u8 *buf, __u32 depth, __u8 *f, struct innet_nc_register *r,
				     struct innet_nc_config *cfg, __u32 *pops)
{
	int next = NC_NEXT_END;
	*pops = 1;
	if (!is_tail(cfg->role))
		next = nc_next_hop(buf, depth, pops);
	if (next == NC_NEXT_NO_ROUTE) {
		count(INNET_NC_CTR_DROPPED_NO_ROUTE);
		return INNET_CHAIN_VERDICT_DROP;
	}
	if (next == NC_NEXT_END && !is_tail(cfg->role)) {
		count(INNET_NC_CTR_DROPPED_NOT_TAIL);
		return INNET_CHAIN_VERDICT_DROP;
	}
	if (f[INNET_NC_OFF_OP] == INNET_NC_OP_WRITE_REQ) {
		if (!nc_stack_follows_chain(buf, depth, *pops, cfg)) {
			count(INNET_NC_CTR_DROPPED_WRITE_OFF_CHAIN);
			return INNET_CHAIN_VERDICT_DROP;
		}
		if (!nc_write(f, r, cfg))
			return INNET_CHAIN_VERDICT_DROP;
	}
	if (next >= 0) {
		count(INNET_NC_CTR_FORWARDED);
		return verdict_port(INNET_CHAIN_VERDICT_PORT, (__u32)next);
	}
	return nc_answer(f, depth, r, pops);
}

/* NcNode::process_len on `len` payload bytes in scratch `buf`. The packet
 * becomes buf[4 * pops .. entries * 4 + INNET_NC_FIXED_LEN]. */
static __always_inline int nc_process(__u8 *buf, __u32 len, struct innet_nc_config *cfg, __u32 sender, __u32 *pops,
				      __u32 *end)
{
	int entries = nc_validate(buf, len);
	if (entries < 0) {
		count(INNET_NC_CTR_DROPPED_MALFORMED + (__u32)(-1 - entries));
		return INNET_CHAIN_VERDICT_DROP;
	}
	if (cfg->role == INNET_CHAIN_ROLE_NONE) {
		count(INNET_NC_CTR_DROPPED_UNCONFIGURED);
		return INNET_CHAIN_VERDICT_DROP;
	}
	__u32 fixed = (__u32)entries * INNET_NC_ADDR_LEN;
	__u8 *f = AT(buf, fixed);
	__u8 op = f[INNET_NC_OFF_OP];
	/* A request has its terminator: entries >= 1, so depth below is >= 0. */
	if ((op != INNET_NC_OP_READ_REQ && op != INNET_NC_OP_WRITE_REQ) || entries <= 1) {
		count(INNET_NC_CTR_DROPPED_UNEXPECTED);
		return INNET_CHAIN_VERDICT_DROP;
	}
	if (load_be32(buf) != cfg->addr) {
		count(INNET_NC_CTR_DROPPED_NOT_FOR_ME);
		return INNET_CHAIN_VERDICT_DROP;
	}
	int slot = find_key(f + INNET_NC_OFF_KEY, cfg->keys);
	__u32 index = (__u32)slot;
	struct innet_nc_register *r = slot < 0 ? 0 : bpf_map_lookup_elem(&nc_registers, &index);
	if (!r) {
		count(INNET_NC_CTR_DROPPED_UNKNOWN_KEY);
		return INNET_CHAIN_VERDICT_DROP;
	}
	if (op == INNET_NC_OP_WRITE_REQ && !write_trusted(is_head(cfg->role), cfg->prev, sender)) {
		count(INNET_NC_CTR_DROPPED_WRITE_NOT_FROM_PREV);
		return INNET_CHAIN_VERDICT_DROP;
	}
	int verdict = nc_decide(buf, (__u32)entries - 1, f, r, cfg, pops);
	f[INNET_NC_OFF_SC] = (__u8)((__u32)entries - *pops);
	*end = fixed + INNET_NC_FIXED_LEN;
	return verdict;
}

struct headers {
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
} __attribute__((packed));
_Static_assert(sizeof(struct headers) == CHAIN_HEADERS_LEN, "Ethernet + IPv4 + UDP");

/* Drops the first `pops` stack entries and everything after byte `end` of the
 * payload at CHAIN_HEADERS_LEN; fixes the IPv4 and UDP lengths. Under --auth-key
 * (`auth`) the rest is sealed for the next node (`to_node`). 0 on failure. */
static __always_inline int shrink(struct xdp_md *ctx, __u32 pops, __u32 end, const struct innet_auth *auth,
				  int to_node)
{
	struct headers h;
	if (bpf_xdp_load_bytes(ctx, 0, &h, sizeof(h)) < 0)
		return 0;
	__u32 cut = (pops & 15) * INNET_NC_ADDR_LEN;
	__u32 len = end - cut; /* payload bytes left */
	if (bpf_xdp_adjust_head(ctx, (int)cut) < 0)
		return 0;
	if (bpf_xdp_store_bytes(ctx, 0, &h, sizeof(h)) < 0)
		return 0;
	return auth ? chain_auth_out(ctx, auth, to_node, len) : chain_payload_resize(ctx, len);
}

SEC("xdp")
int xdp_netchain(struct xdp_md *ctx)
{
	struct innet_nc_config *cfg = config();
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&nc_scratch, &zero);
	if (!cfg || !s)
		return XDP_PASS;
	struct l234 l;
	if (!parse_l234(ctx, cfg->udp_port, &l)) {
		count(INNET_NC_CTR_XDP_PASSED_OTHER);
		return XDP_PASS;
	}
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 offset = (__u32)((void *)(l.udp + 1) - data);
	__u32 len = udp_payload_len(&l, data_end);
	if (offset != CHAIN_HEADERS_LEN)
		return XDP_PASS; /* parse_l234 guarantees it; shrink() relies on it */
	__u32 sender = chain_sender(ctx, l.eth);
	struct innet_auth *auth = chain_auth_on();
	if (!chain_auth_in(ctx, auth, sender, &len))
		return XDP_DROP;
	/* Nothing after the fixed part is ever read: copy at most a maximal packet. */
	__u32 copy = len < INNET_NC_MAX_LEN ? len : INNET_NC_MAX_LEN;
	/* The mask changes nothing for copy in 1..=INNET_NC_MAX_LEN; it shows
	 * the verifier a non-zero length within scratch. */
	__u32 bounded = ((copy - 1) & SCRATCH_MASK) + 1;
	if (copy > 0 && bpf_xdp_load_bytes(ctx, offset, s->buf, bounded) < 0)
		return XDP_PASS;
	__u32 pops = 0, end = 0;
	int verdict = nc_process(s->buf, copy, cfg, sender, &pops, &end);
	if (verdict_code(verdict) == INNET_CHAIN_VERDICT_DROP)
		return XDP_DROP;
	if (copy > 0 && bpf_xdp_store_bytes(ctx, offset, s->buf, bounded) < 0)
		return XDP_DROP;
	if (end > copy || !shrink(ctx, pops, end, auth, verdict_to_node(verdict)) || !parse_l234(ctx, cfg->udp_port, &l))
		return XDP_DROP;
	return chain_emit(ctx, &l, verdict, cfg->node_ip, cfg->origin_port, (__u16)cfg->reply_port);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
