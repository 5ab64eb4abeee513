/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The XDP side both chain node programs share: the port table, counting,
 * and turning a verdict into an action (see innet_chain.h for the mapping).
 * Include after innet_xdp.h, with CHAIN_CTR_COUNT, CHAIN_CTR_XDP_NO_PORT and
 * CHAIN_CTR_AUTH_REFUSED defined to the program's counter layout.
 *
 * --auth-key (innet_auth.h, innet_live::chain's rule): with chain_auth on,
 * a frame from a chain node (chain_sender) is taken only if its UDP payload
 * ends in a MAC trailer that checks under either key (the payload logic
 * sees the message before it); what goes to a chain node (a Port verdict,
 * the tail's ACK group) leaves sealed, what goes to a client (Origin,
 * Reflect) bare. Clients carry no key: their frames are never opened.
 */
#ifndef INNET_CHAIN_NODE_H
#define INNET_CHAIN_NODE_H

#include "innet_auth.h"
#include "innet_chain.h"

/* The neighbour behind each port (PORT_NEXT, PORT_TAIL, the clients). */
MAP(chain_ports, BPF_MAP_TYPE_ARRAY, INNET_CHAIN_PORTS_MAX, struct innet_chain_port);

/* The chain nodes this node knows, by ingress interface and MAC. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, INNET_CHAIN_PEERS_MAX);
	__type(key, struct innet_chain_peer_key);
	__type(value, __u32);
} chain_peers SEC(".maps");

/* The chain index of the node that sent the frame (its ingress interface
 * and Ethernet source in chain_peers), or INNET_CHAIN_PEER_NONE. */
static __always_inline __u32 chain_sender(struct xdp_md *ctx, struct ethhdr *eth)
{
	struct innet_chain_peer_key k = {.ifindex = ctx->ingress_ifindex};
	__builtin_memcpy(k.mac, eth->h_source, ETH_ALEN);
	__u32 *peer = bpf_map_lookup_elem(&chain_peers, &k);
	return peer ? *peer : INNET_CHAIN_PEER_NONE;
}

/* innet_chain::netcraq::write_trusted: a write is taken from the
 * predecessor, or at the head from a sender that is not a chain node. */
static __always_inline int write_trusted(int head, __u32 prev, __u32 sender)
{
	if (sender == INNET_CHAIN_PEER_NONE)
		return head;
	return sender == prev;
}

/* Every decision counted (the program's INNET_*_CTR_*). */
MAP(chain_counters, BPF_MAP_TYPE_ARRAY, CHAIN_CTR_COUNT, __u64);

static __always_inline void count(__u32 index)
{
	__u64 *c = bpf_map_lookup_elem(&chain_counters, &index);
	if (c)
		__sync_fetch_and_add(c, 1);
}

/* A verdict (innet_chain.h): the code in the low byte, the port or group
 * above it. */
static __always_inline int verdict_port(int code, __u32 port)
{
	return code | (int)(port << 8);
}

static __always_inline int verdict_code(int verdict)
{
	return verdict & 0xff;
}

static __always_inline __u32 verdict_arg(int verdict)
{
	return (__u32)verdict >> 8;
}

/* Whether a verdict sends to chain nodes (sealed under --auth-key). */
static __always_inline int verdict_to_node(int verdict)
{
	return verdict_code(verdict) == INNET_CHAIN_VERDICT_PORT || verdict_code(verdict) == INNET_CHAIN_VERDICT_MULTICAST;
}

/* ---- --auth-key --------------------------------------------------------- */

/* Off unless the loader turns it on (crates/xdp/src/auth.rs). */
MAP(chain_auth, BPF_MAP_TYPE_ARRAY, 1, struct innet_auth);
/* The payload being opened or sealed. */
MAP(chain_auth_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, struct innet_auth_scratch);

/* Ethernet, IPv4 without options (parse_l234), UDP: where the payload starts. */
#define CHAIN_HEADERS_LEN (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))

/* The keys, if --auth-key is on. */
static __always_inline struct innet_auth *chain_auth_on(void)
{
	__u32 zero = 0;
	struct innet_auth *a = bpf_map_lookup_elem(&chain_auth, &zero);
	return a && a->on ? a : 0;
}

/* The first `len` bytes of the UDP payload in the scratch buffer, or 0. */
static __always_inline struct innet_auth_scratch *chain_payload_load(struct xdp_md *ctx, __u32 len)
{
	__u32 zero = 0;
	struct innet_auth_scratch *s = bpf_map_lookup_elem(&chain_auth_scratch, &zero);
	if (!s || len == 0 || len > INNET_AUTH_MSG_MAX + INNET_AUTH_TRAILER_LEN)
		return 0;
	return bpf_xdp_load_bytes(ctx, CHAIN_HEADERS_LEN, s->buf, len) == 0 ? s : 0;
}

/* A frame from chain node `sender` (not INNET_CHAIN_PEER_NONE) must end in
 * a trailer that checks; `*len` (the payload's) becomes its message's. 0:
 * refused (counted), drop it. */
static __always_inline int chain_auth_in(struct xdp_md *ctx, const struct innet_auth *a, __u32 sender, __u32 *len)
{
	if (!a || sender == INNET_CHAIN_PEER_NONE)
		return 1;
	struct innet_auth_scratch *s = chain_payload_load(ctx, *len);
	if (!s || !innet_auth_open_buf(a, s->buf, *len)) {
		count(CHAIN_CTR_AUTH_REFUSED);
		return 0;
	}
	*len -= INNET_AUTH_TRAILER_LEN;
	return 1;
}

/* The Ethernet, IPv4 and UDP headers as bytes. */
struct chain_headers {
	__u8 b[CHAIN_HEADERS_LEN];
};

/* Grows the frame by `delta` bytes at its front and moves its headers and
 * `payload` bytes of payload there, leaving `delta` bytes at the end: for
 * a frame without tailroom (a veth's skb taken in place by driver-mode
 * XDP has little), which always has XDP_PACKET_HEADROOM at its front. */
static __always_inline int chain_grow_at_front(struct xdp_md *ctx, int delta, __u32 payload)
{
	struct chain_headers h;
	__u32 zero = 0;
	struct innet_auth_scratch *s = bpf_map_lookup_elem(&chain_auth_scratch, &zero);
	/* Bounded after the barrier, so that both calls see the bound. */
	asm volatile("" : "+r"(payload));
	if (!s || payload == 0 || payload > INNET_AUTH_MSG_MAX + INNET_AUTH_TRAILER_LEN || delta <= 0 ||
	    delta > INNET_AUTH_TRAILER_LEN)
		return 0;
	if (bpf_xdp_load_bytes(ctx, 0, &h, sizeof(h)) < 0 || bpf_xdp_load_bytes(ctx, CHAIN_HEADERS_LEN, s->buf, payload) < 0)
		return 0;
	if (bpf_xdp_adjust_head(ctx, -delta) < 0 || bpf_xdp_store_bytes(ctx, 0, &h, sizeof(h)) < 0)
		return 0;
	return bpf_xdp_store_bytes(ctx, CHAIN_HEADERS_LEN, s->buf, payload) == 0;
}

/* Makes the UDP payload exactly `want` bytes (the frame grows or shrinks
 * at its end); the IPv4 and UDP lengths and the IPv4 checksum follow.
 * Packet pointers are invalid afterwards. 0 on failure. */
static __always_inline int chain_payload_resize(struct xdp_md *ctx, __u32 want)
{
	int frame = (int)((long)ctx->data_end - (long)ctx->data);
	/* A scalar from here on (see netchain.bpf.c's shrink). */
	asm volatile("" : "+r"(frame));
	int delta = (int)(CHAIN_HEADERS_LEN + want) - frame;
	if (delta != 0 && bpf_xdp_adjust_tail(ctx, delta) < 0 &&
	    !(delta > 0 && chain_grow_at_front(ctx, delta, (__u32)(frame - (int)CHAIN_HEADERS_LEN))))
		return 0;
	struct l234 l;
	if (!parse_l234_at((void *)(long)ctx->data, (void *)(long)ctx->data_end, &l))
		return 0;
	l.udp->len = bpf_htons((__u16)(sizeof(struct udphdr) + want));
	l.ip->tot_len = bpf_htons((__u16)(sizeof(struct iphdr) + sizeof(struct udphdr) + want));
	ip_checksum(l.ip);
	return 1;
}

/* The `len`-byte message that leaves: sealed for chain nodes (`to_node`),
 * bare for a client, the frame resized to fit. A message too long to seal
 * (INNET_AUTH_MSG_MAX) is counted as refused. 0: drop. The caller parses
 * the headers again. */
static __always_inline int chain_auth_out(struct xdp_md *ctx, const struct innet_auth *a, int to_node, __u32 len)
{
	if (!to_node)
		return chain_payload_resize(ctx, len);
	if (len > INNET_AUTH_MSG_MAX) {
		count(CHAIN_CTR_AUTH_REFUSED);
		return 0;
	}
	if (!chain_payload_resize(ctx, len + INNET_AUTH_TRAILER_LEN))
		return 0;
	struct innet_auth_scratch *s = chain_payload_load(ctx, len);
	if (!s)
		return 0;
	__u8 t[INNET_AUTH_TRAILER_LEN];
	innet_auth_seal_bytes(a, s->buf, len, INNET_AUTH_MSG_WORDS, t);
	return bpf_xdp_store_bytes(ctx, CHAIN_HEADERS_LEN + len, t, INNET_AUTH_TRAILER_LEN) == 0;
}

static __always_inline struct innet_chain_port *chain_port(__u32 port)
{
	struct innet_chain_port *p = bpf_map_lookup_elem(&chain_ports, &port);
	return p && p->ifindex ? p : 0;
}

/* Out of port `port` to the neighbour there, or drop if it is not set up. */
static __always_inline int chain_port_out(struct xdp_md *ctx, struct l234 *l, struct innet_chain_port *p)
{
	if (!p) {
		count(CHAIN_CTR_XDP_NO_PORT);
		return XDP_DROP;
	}
	__builtin_memcpy(l->eth->h_source, p->port_mac, ETH_ALEN);
	__builtin_memcpy(l->eth->h_dest, p->peer_mac, ETH_ALEN);
	ip_checksum(l->ip);
	return out_port(ctx, p->ifindex);
}

/* The XDP action for the payload logic's `verdict` (innet_chain.h). An
 * ORIGIN reply goes to the origin's address at `reply_port` (host order),
 * or, if 0, at the request's source port. */
static __always_inline int chain_emit(struct xdp_md *ctx, struct l234 *l, int verdict, __be32 node_ip,
				      __u32 origin_port, __u16 reply_port)
{
	l->udp->check = 0; /* optional in IPv4; the payload changed */
	switch (verdict_code(verdict)) {
	case INNET_CHAIN_VERDICT_REFLECT:
		swap_addresses(l);
		return XDP_TX;
	case INNET_CHAIN_VERDICT_PORT: {
		struct innet_chain_port *p = chain_port(verdict_arg(verdict));
		if (p)
			l->ip->daddr = p->ip; /* the source, the origin, stays */
		return chain_port_out(ctx, l, p);
	}
	case INNET_CHAIN_VERDICT_ORIGIN: {
		__be16 port = l->udp->dest;
		l->ip->daddr = l->ip->saddr;
		l->ip->saddr = node_ip;
		l->udp->dest = reply_port ? bpf_htons(reply_port) : l->udp->source;
		l->udp->source = port;
		return chain_port_out(ctx, l, chain_port(origin_port));
	}
	case INNET_CHAIN_VERDICT_MULTICAST:
		return XDP_PASS; /* to tc_chain_multicast, which clones */
	default:
		return XDP_DROP;
	}
}

#endif /* INNET_CHAIN_NODE_H */
