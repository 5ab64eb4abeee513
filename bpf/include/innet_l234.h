/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Ethernet / IPv4 / UDP around a protocol payload, for every program in bpf/
 * (XDP and tc alike: they take the packet's data and data_end pointers).
 * Include after <linux/if_ether.h>, <linux/ip.h>, <linux/in.h>,
 * <linux/udp.h> and <bpf/bpf_endian.h>.
 */
#ifndef INNET_L234_H
#define INNET_L234_H

struct l234 {
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;
};

/* The headers of a whole IPv4/UDP datagram (no IP options, not a
 * fragment) in [data, end), or 0: anything else is other traffic. */
static __always_inline int innet_parse_l234(void *data, void *end, struct l234 *l)
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

/* Back to the sender: MACs, IPs and UDP ports swapped. */
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

#endif /* INNET_L234_H */
