// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The NetCRAQ node in XDP: Algorithm 1 of Sagkriotis and Pezaros 2022 as
 * crates/chain/src/netcraq.rs (the reference) runs it, with its deviations
 * (one index per object, ACKs clean only up to the ACKed version, explicit
 * WRITE_REFUSED). Read that module's essay first; comments here only say
 * where BPF differs.
 *
 * craq_process() is CraqNode::process on the UDP payload in the packet: it
 * returns a verdict (innet_chain.h) and rewrites the 21 bytes in place. The
 * differential test (crates/xdp/tests/chain_differential.rs) holds it to
 * the reference: verdict, bytes, counters, craq_store and craq_index.
 *
 * How the tail's ACK (Verdict::Multicast) reaches its group is the
 * config's choice (mcast):
 *  - INNET_CRAQ_MCAST_DEVMAP: bpf_redirect_map on the devmap
 *    craq_group_ports with BPF_F_BROADCAST (Linux 5.13+): the kernel copies
 *    the frame to every member's device (the ingress device too: the
 *    predecessor is a member) and xdp_craq_egress, each entry's egress
 *    program, rewrites each copy for the member on its device
 *    (craq_member_at). One member per device; in driver mode the copies
 *    stay xdp_frames, no skb, no tc.
 *  - INNET_CRAQ_MCAST_TC: the ACK leaves XDP with XDP_PASS; the tc clsact
 *    ingress program tc_chain_multicast clones it to every member of
 *    chain_group with bpf_clone_redirect and drops the original. Any
 *    number of members per device.
 * Both rewrite a copy the same way (address_copy). Under --auth-key the
 * ACK is sealed once, before it is copied: every copy carries the trailer,
 * the writer's too (clients ignore bytes after the value; trimming it per
 * copy would cost the egress program an adjust_tail).
 *
 * Roles, writes_paused and the port table are the control plane's (config
 * maps). Promotion to tail (CraqNode::set_role committing the latest
 * versions) is done by the loader on the maps, between packets.
 *
 * Concurrency: as in txn_switch.bpf.c, exact when packets are processed one
 * at a time; a chain node is attached to one receive queue in the testbed.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "innet_netcraq.h"
#include "innet_xdp.h"
#define CHAIN_CTR_COUNT INNET_CRAQ_CTR_COUNT
#define CHAIN_CTR_XDP_NO_PORT INNET_CRAQ_CTR_XDP_NO_PORT
#define CHAIN_CTR_AUTH_REFUSED INNET_CRAQ_CTR_AUTH_REFUSED
#include "innet_chain_node.h"

/* Role, pause flag, capacities, addresses (control plane). */
MAP(craq_config, BPF_MAP_TYPE_ARRAY, 1, struct innet_craq_config);

/* Algorithm 1 line 1, objects_store: object k's cells are
 * k * versions .. (k + 1) * versions; cell 0 is the clean version. */
MAP(craq_store, BPF_MAP_TYPE_ARRAY, INNET_CRAQ_OBJECTS_DEFAULT *INNET_CRAQ_VERSIONS_DEFAULT, struct innet_craq_cell);

/* Lines 2-3: dirty versions per object. */
MAP(craq_index, BPF_MAP_TYPE_ARRAY, INNET_CRAQ_OBJECTS_DEFAULT, __u8);

/* The tail's ACK group (INNET_CHAIN_GROUP_ACK), used by tc_chain_multicast. */
MAP(chain_group, BPF_MAP_TYPE_ARRAY, INNET_CHAIN_GROUP_MAX, struct innet_chain_member);

/* INNET_CRAQ_MCAST_DEVMAP: the group's devices (ifindex -> { ifindex,
 * xdp_craq_egress }), which a broadcast redirect copies the ACK to, and the
 * member on each device, by ifindex, for the egress program's rewrite. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, INNET_CHAIN_GROUP_MAX);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} craq_group_ports SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, INNET_CHAIN_GROUP_MAX);
	__type(key, __u32);
	__type(value, struct innet_chain_member);
} craq_member_at SEC(".maps");

static __always_inline struct innet_craq_config *config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&craq_config, &zero);
}

static __always_inline int is_tail(__u32 role)
{
	return role == INNET_CHAIN_ROLE_TAIL || role == INNET_CHAIN_ROLE_HEAD_TAIL;
}

static __always_inline struct innet_craq_cell *cell(struct innet_craq_config *cfg, __u32 key, __u32 i)
{
	__u32 c = key * cfg->versions + i;
	return bpf_map_lookup_elem(&craq_store, &c);
}

static __always_inline int read(struct innet_craq_hdr *p, struct innet_craq_config *cfg, __u32 key, __u8 *index)
{
	if (is_tail(cfg->role)) {
		/* The tail commits on receipt: its newest version is clean. */
		struct innet_craq_cell *c = cell(cfg, key, *index);
		if (!c)
			return INNET_CHAIN_VERDICT_DROP;
		count(INNET_CRAQ_CTR_READS_AT_TAIL);
		__builtin_memcpy(p->value, c->value, INNET_CRAQ_VALUE_LEN);
		p->kv_op = INNET_CRAQ_OP_READ_REPLY;
		return INNET_CHAIN_VERDICT_ORIGIN;
	}
	if (*index == 0) {
		struct innet_craq_cell *c = cell(cfg, key, 0);
		if (!c)
			return INNET_CHAIN_VERDICT_DROP;
		count(INNET_CRAQ_CTR_READS_CLEAN);
		__builtin_memcpy(p->value, c->value, INNET_CRAQ_VALUE_LEN);
		p->kv_op = INNET_CRAQ_OP_READ_REPLY;
		return INNET_CHAIN_VERDICT_REFLECT;
	}
	count(INNET_CRAQ_CTR_READS_TO_TAIL);
	return verdict_port(INNET_CHAIN_VERDICT_PORT, INNET_CHAIN_PORT_TAIL);
}

static __always_inline int refuse(struct innet_craq_hdr *p, __u32 counter)
{
	count(counter);
	p->kv_op = INNET_CRAQ_OP_WRITE_REFUSED;
	return INNET_CHAIN_VERDICT_ORIGIN;
}

static __always_inline int write(struct innet_craq_hdr *p, struct innet_craq_config *cfg, __u32 key, __u8 *index)
{
	if (cfg->writes_paused)
		return refuse(p, INNET_CRAQ_CTR_WRITES_REFUSED_PAUSED);
	if (is_tail(cfg->role)) {
		struct innet_craq_cell *c = cell(cfg, key, 0);
		if (!c)
			return INNET_CHAIN_VERDICT_DROP;
		__builtin_memcpy(c->value, p->value, INNET_CRAQ_VALUE_LEN);
		*index = 0;
		count(INNET_CRAQ_CTR_WRITES_COMMITTED_AT_TAIL);
		p->kv_op = INNET_CRAQ_OP_ACK;
		return verdict_port(INNET_CHAIN_VERDICT_MULTICAST, INNET_CHAIN_GROUP_ACK);
	}
	__u32 next = (__u32)*index + 1;
	if (next >= cfg->versions)
		return refuse(p, INNET_CRAQ_CTR_WRITES_REFUSED_FULL);
	struct innet_craq_cell *c = cell(cfg, key, next);
	if (!c)
		return INNET_CHAIN_VERDICT_DROP;
	__builtin_memcpy(c->value, p->value, INNET_CRAQ_VALUE_LEN);
	*index = (__u8)next;
	count(INNET_CRAQ_CTR_WRITES_DIRTY);
	return verdict_port(INNET_CHAIN_VERDICT_PORT, INNET_CHAIN_PORT_NEXT);
}

/* Lines 39-40 as the reference deviates: the oldest dirty version equal to
 * the ACKed value becomes clean, older ones are dropped, newer stay dirty. */
static __always_inline int ack(struct innet_craq_hdr *p, struct innet_craq_config *cfg, __u32 key, __u8 *index)
{
	__u32 dirty = *index;
	struct value v = value_load(p->value);
	__u32 found = 0;
	for (__u32 i = 1; i < INNET_CRAQ_VERSIONS_MAX; i++) {
		if (i > dirty)
			break;
		struct innet_craq_cell *c = cell(cfg, key, i);
		if (c && value_eq(value_load(c->value), v)) {
			found = i;
			break;
		}
	}
	if (!found) {
		count(INNET_CRAQ_CTR_ACKS_STALE);
		return INNET_CHAIN_VERDICT_DROP;
	}
	for (__u32 j = 0; j < INNET_CRAQ_VERSIONS_MAX; j++) {
		if (j > dirty - found)
			break;
		struct innet_craq_cell *to = cell(cfg, key, j);
		struct innet_craq_cell *from = cell(cfg, key, found + j);
		if (to && from)
			__builtin_memcpy(to->value, from->value, INNET_CRAQ_VALUE_LEN);
	}
	*index = (__u8)(dirty - found);
	count(INNET_CRAQ_CTR_ACKS_APPLIED);
	return INNET_CHAIN_VERDICT_DROP;
}

/* CraqNode::process_from: `p` has `len` bytes of payload (p + 1 within the
 * packet only when len >= INNET_CRAQ_LEN); `sender` is the chain index of
 * the node that sent it (chain_sender). */
static __always_inline int craq_process(struct innet_craq_hdr *p, __u32 len, struct innet_craq_config *cfg,
					__u32 sender)
{
	if (len < INNET_CRAQ_LEN) {
		count(INNET_CRAQ_CTR_DROPPED_MALFORMED + INNET_CRAQ_ERR_TRUNCATED);
		return INNET_CHAIN_VERDICT_DROP;
	}
	__u8 op = p->kv_op;
	if (op < INNET_CRAQ_OP_READ || op > INNET_CRAQ_OP_WRITE_REFUSED) {
		count(INNET_CRAQ_CTR_DROPPED_MALFORMED + INNET_CRAQ_ERR_UNKNOWN_OP);
		return INNET_CHAIN_VERDICT_DROP;
	}
	if (cfg->role == INNET_CHAIN_ROLE_NONE) {
		count(INNET_CRAQ_CTR_DROPPED_UNCONFIGURED);
		return INNET_CHAIN_VERDICT_DROP;
	}
	__u32 key = bpf_ntohl(p->key);
	__u8 *index = key < cfg->objects ? bpf_map_lookup_elem(&craq_index, &key) : 0;
	if (!index) {
		count(INNET_CRAQ_CTR_DROPPED_KEY_OUT_OF_RANGE);
		return INNET_CHAIN_VERDICT_DROP;
	}
	if (op == INNET_CRAQ_OP_READ)
		return read(p, cfg, key, index);
	if (op == INNET_CRAQ_OP_WRITE) {
		if (!write_trusted(cfg->role == INNET_CHAIN_ROLE_HEAD || cfg->role == INNET_CHAIN_ROLE_HEAD_TAIL, cfg->prev,
				   sender)) {
			count(INNET_CRAQ_CTR_DROPPED_WRITE_NOT_FROM_PREV);
			return INNET_CHAIN_VERDICT_DROP;
		}
		return write(p, cfg, key, index);
	}
	if (op == INNET_CRAQ_OP_ACK && !is_tail(cfg->role)) {
		if (sender == INNET_CHAIN_PEER_NONE || sender != cfg->tail) {
			count(INNET_CRAQ_CTR_DROPPED_ACK_NOT_FROM_TAIL);
			return INNET_CHAIN_VERDICT_DROP;
		}
		return ack(p, cfg, key, index);
	}
	count(INNET_CRAQ_CTR_DROPPED_UNEXPECTED);
	return INNET_CHAIN_VERDICT_DROP;
}

SEC("xdp")
int xdp_netcraq(struct xdp_md *ctx)
{
	struct innet_craq_config *cfg = config();
	if (!cfg)
		return XDP_PASS;
	struct l234 l;
	if (!parse_l234(ctx, cfg->udp_port, &l)) {
		count(INNET_CRAQ_CTR_XDP_PASSED_OTHER);
		return XDP_PASS;
	}
	void *end = (void *)(long)ctx->data_end;
	struct innet_craq_hdr *p = (void *)(l.udp + 1);
	__u32 len = udp_payload_len(&l, end);
	__u32 sender = chain_sender(ctx, l.eth);
	struct innet_auth *auth = chain_auth_on();
	if (!chain_auth_in(ctx, auth, sender, &len))
		return XDP_DROP;
	if (len >= INNET_CRAQ_LEN && (void *)(p + 1) > end)
		return XDP_DROP; /* cannot happen (len <= what the frame holds); for the verifier */
	int verdict = craq_process(p, len < INNET_CRAQ_LEN ? 0 : len, cfg, sender);
	if (auth && verdict_code(verdict) != INNET_CHAIN_VERDICT_DROP &&
	    (!chain_auth_out(ctx, auth, verdict_to_node(verdict), len) || !parse_l234(ctx, cfg->udp_port, &l)))
		return XDP_DROP;
	if (verdict_code(verdict) == INNET_CHAIN_VERDICT_MULTICAST && cfg->mcast == INNET_CRAQ_MCAST_DEVMAP) {
		l.udp->check = 0; /* optional in IPv4; the payload changed */
		return bpf_redirect_map(&craq_group_ports, 0, BPF_F_BROADCAST);
	}
	return chain_emit(ctx, &l, verdict, cfg->node_ip, cfg->origin_port, 0);
}

/* ---- the tail's ACK to every member of the group ---------------------- */

/* Rewrites one copy of the ACK (headers `l`) for a member behind `port`:
 * to the port's neighbour, keeping the writer as the source (as a Port
 * verdict), or to the writer from this node (as an Origin verdict). */
static __always_inline void address_copy(struct l234 *l, const struct innet_craq_config *cfg, int to_origin,
					 const struct innet_chain_port *port, __be32 origin_ip, __be16 origin_port)
{
	__builtin_memcpy(l->eth->h_source, port->port_mac, ETH_ALEN);
	__builtin_memcpy(l->eth->h_dest, port->peer_mac, ETH_ALEN);
	l->ip->saddr = to_origin ? cfg->node_ip : origin_ip;
	l->ip->daddr = to_origin ? origin_ip : port->ip;
	l->udp->source = to_origin ? bpf_htons(cfg->udp_port) : origin_port;
	l->udp->dest = to_origin ? origin_port : bpf_htons(cfg->udp_port);
	l->udp->check = 0;
	ip_checksum(l->ip);
}

/* The egress program of every craq_group_ports entry: the kernel runs it
 * on each copy a broadcast redirect makes, as it leaves for
 * `egress_ifindex`; it rewrites the copy for the member on that device. */
SEC("xdp/devmap")
int xdp_craq_egress(struct xdp_md *ctx)
{
	struct innet_craq_config *cfg = config();
	__u32 ifindex = ctx->egress_ifindex;
	struct innet_chain_member *m = bpf_map_lookup_elem(&craq_member_at, &ifindex);
	struct l234 l;
	if (!cfg || !m || !parse_l234_at((void *)(long)ctx->data, (void *)(long)ctx->data_end, &l)) {
		count(INNET_CRAQ_CTR_XDP_NO_PORT);
		return XDP_DROP;
	}
	int to_origin = m->kind == INNET_CHAIN_MEMBER_ORIGIN;
	struct innet_chain_port *port = chain_port(to_origin ? cfg->origin_port : m->port);
	if (!port) {
		count(INNET_CRAQ_CTR_XDP_NO_PORT);
		return XDP_DROP;
	}
	address_copy(&l, cfg, to_origin, port, l.ip->saddr, l.udp->source);
	count(INNET_CRAQ_CTR_MULTICAST_COPIES);
	return XDP_PASS;
}

/* ---- tc: the same by clones ------------------------------------------- */

/* The headers and NetCRAQ payload of an IPv4/UDP frame (any ports), or 0. */
static __always_inline int skb_parse(struct __sk_buff *skb, struct l234 *l, struct innet_craq_hdr **p)
{
	void *end = (void *)(long)skb->data_end;
	if (!parse_l234_at((void *)(long)skb->data, end, l))
		return 0;
	*p = (void *)(l->udp + 1);
	return (void *)(*p + 1) <= end;
}

/* One copy of the ACK per member of chain_group: to a port's neighbour
 * (addresses as a Port verdict) or to the writer (as an Origin verdict). */
SEC("tc")
int tc_chain_multicast(struct __sk_buff *skb)
{
	struct innet_craq_config *cfg = config();
	struct l234 l;
	struct innet_craq_hdr *p;
	if (!cfg || !is_tail(cfg->role))
		return TC_ACT_OK;
	bpf_skb_pull_data(skb, sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr) + INNET_CRAQ_LEN);
	if (!skb_parse(skb, &l, &p) || l.udp->dest != bpf_htons(cfg->udp_port) || p->kv_op != INNET_CRAQ_OP_ACK)
		return TC_ACT_OK;
	__be32 origin_ip = l.ip->saddr;
	__be16 origin_port = l.udp->source;
#pragma unroll /* the index is the lookup key: unrolled, each is a constant */
	for (__u32 m = 0; m < INNET_CHAIN_GROUP_MAX; m++) {
		__u32 k = m;
		struct innet_chain_member *member = bpf_map_lookup_elem(&chain_group, &k);
		if (!member || member->kind == INNET_CHAIN_MEMBER_NONE)
			continue;
		int to_origin = member->kind == INNET_CHAIN_MEMBER_ORIGIN;
		struct innet_chain_port *port = chain_port(to_origin ? cfg->origin_port : member->port);
		/* Again for every copy: the last clone invalidated the pointers. */
		if (!port || !skb_parse(skb, &l, &p)) {
			count(INNET_CRAQ_CTR_XDP_NO_PORT);
			continue;
		}
		address_copy(&l, cfg, to_origin, port, origin_ip, origin_port);
		if (bpf_clone_redirect(skb, port->ifindex, 0) == 0)
			count(INNET_CRAQ_CTR_MULTICAST_COPIES);
	}
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
