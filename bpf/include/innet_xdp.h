/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * What every innet XDP program shares (included by every bpf/ program after the
 * kernel headers): map declarations, byte loads, 16-byte values, and the
 * Ethernet / IPv4 / UDP handling around a protocol payload.
 */
#ifndef INNET_XDP_H
#define INNET_XDP_H

/* An array-like map with __u32 keys (libbpf BTF-defined map). */
#define MAP(name, map_type, entries, value_type)    \
	struct {                                    \
		__uint(type, map_type);             \
		__uint(max_entries, entries);       \
		__type(key, __u32);                 \
		__type(value, value_type);          \
	} name SEC(".maps")

static __always_inline __u32 load_be32(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | (__u32)p[3];
}

/* ---- values ---------------------------------------------------------- */

struct value {
	__u64 lo, hi;
};

static __always_inline struct value value_load(const __u8 *p)
{
	struct value v;
	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

static __always_inline void value_store(__u8 *p, struct value v)
{
	__builtin_memcpy(p, &v, sizeof(v));
}

static __always_inline int value_eq(struct value a, struct value b)
{
	return a.lo == b.lo && a.hi == b.hi;
}

/* ---- Ethernet / IPv4 / UDP ------------------------------------------- */

struct l234 {
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;
};

/* The Ethernet / IPv4 (no options, not a fragment) / UDP headers of the
 * frame in [data, end) (XDP or tc), or 0. */
static __always_inline int parse_l234_at(void *data, void *end, struct l234 *l)
{
	l->eth = data;
	if ((void *)(l->eth + 1) > end || l->eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	l->ip = (void *)(l->eth + 1);
	if ((void *)(l->ip + 1) > end || l->ip->ihl != 5 || l->ip->protocol != IPPROTO_UDP)
		return 0;
	if (l->ip->frag_off & bpf_htons(0x3fff)) /* MF or an offset: not a whole datagram */
		return 0;
	l->udp = (void *)(l->ip + 1);
	return (void *)(l->udp + 1) <= end;
}

/* The headers of UDP to or from `port`, or 0 if this is other traffic. */
static __always_inline int parse_l234(struct xdp_md *ctx, __u32 port, struct l234 *l)
{
	if (!parse_l234_at((void *)(long)ctx->data, (void *)(long)ctx->data_end, l))
		return 0;
	return l->udp->dest == bpf_htons(port) || l->udp->source == bpf_htons(port);
}

/* The UDP payload's length: the UDP header's, but no more than the frame
 * holds (Ethernet padding after it is not payload). */
static __always_inline __u32 udp_payload_len(struct l234 *l, void *end)
{
	__u32 avail = (__u32)(end - (void *)(l->udp + 1));
	__u32 udp_len = bpf_ntohs(l->udp->len);
	__u32 len = udp_len >= sizeof(struct udphdr) ? udp_len - sizeof(struct udphdr) : 0;
	return len < avail ? len : avail;
}

static __always_inline void ip_checksum(struct iphdr *ip)
{
	__u32 sum = 0;
	__u16 *w = (__u16 *)ip;
	ip->check = 0;
#pragma unroll
	for (int i = 0; i < (int)(sizeof(*ip) / 2); i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = (__u16)~sum;
}

static __always_inline void swap_addresses(struct l234 *l)
{
	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, l->eth->h_dest, ETH_ALEN);
	__builtin_memcpy(l->eth->h_dest, l->eth->h_source, ETH_ALEN);
	__builtin_memcpy(l->eth->h_source, mac, ETH_ALEN);
	__be32 ip = l->ip->daddr;
	l->ip->daddr = l->ip->saddr;
	l->ip->saddr = ip;
	__be16 port = l->udp->dest;
	l->udp->dest = l->udp->source;
	l->udp->source = port;
}

static __always_inline int out_port(struct xdp_md *ctx, __u32 ifindex)
{
	return ifindex == ctx->ingress_ifindex ? XDP_TX : bpf_redirect(ifindex, 0);
}

#endif /* INNET_XDP_H */
