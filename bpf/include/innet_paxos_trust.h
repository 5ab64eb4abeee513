/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Who may send what, in BPF: innet_paxos::trust::check (crates/paxos/src/
 * trust.rs, the reference; read its essay first) for the programs of
 * bpf/paxos.bpf.c and bpf/paxos_learner.bpf.c. The classes each message
 * type may come from are a row of the program's config that the loader
 * writes from trust::allowed, so the table is the Rust one; the senders
 * are a map (struct innet_paxos_sender_key -> struct innet_paxos_sender)
 * the loader fills from the deployment. Include after bpf_helpers.h.
 */
#ifndef INNET_PAXOS_TRUST_H
#define INNET_PAXOS_TRUST_H

#include "innet_paxos.h"

/* A sender map: the loader's entries, INNET_PAXOS_MAX_SENDERS at most. */
#define PAXOS_SENDERS_MAP(name)                                            \
	struct {                                                           \
		__uint(type, BPF_MAP_TYPE_HASH);                           \
		__uint(max_entries, INNET_PAXOS_MAX_SENDERS);              \
		__type(key, struct innet_paxos_sender_key);                \
		__type(value, struct innet_paxos_sender);                  \
	} name SEC(".maps")

/* What the sender map `senders` says of a frame that came in on `ifindex`
 * from `ip`:`port` (network order): its own entry, else its address's
 * any-port entry, else an outside sender. The any-port entry is looked up
 * first: one flagged INNET_PAXOS_SENDER_ADDRESS_ONLY (no per-port entry
 * exists for the address) answers with one lookup, as the votes and 2As
 * of the data-plane roles are known; otherwise the frame's own entry. */
static __always_inline struct innet_paxos_sender paxos_sender(void *senders, __u32 ifindex, __be32 ip, __be16 port)
{
	struct innet_paxos_sender_key k = { .ifindex = ifindex, .ip = ip, .port = 0, .pad = 0 };
	/* Outside senders share proposer block 0 (envelope::OUTSIDE_BLOCK). */
	struct innet_paxos_sender out = { .class = INNET_PAXOS_CLASS_OUTSIDE, .issuer = 0, .flags = 0, .pad = 0, .proposer = 0, .pad2 = 0 };
	struct innet_paxos_sender *any = bpf_map_lookup_elem(senders, &k);
	if (any) {
		out = *any;
		if (any->flags & INNET_PAXOS_SENDER_ADDRESS_ONLY)
			return out;
	}
	k.port = bpf_ntohs(port);
	struct innet_paxos_sender *own = bpf_map_lookup_elem(senders, &k);
	if (own)
		out = *own;
	return out;
}

/* A REQUEST's envelope names a proposer of `block` (or the value is no
 * envelope: it names none). envelope::proposer_of_packet. */
static __always_inline int paxos_proposer_in_block(const struct innet_paxos_hdr *h, __u16 block)
{
	if (bpf_ntohl(h->value_len) < INNET_PAXOS_ENVELOPE_HEADER_LEN)
		return 1;
	__u32 id = ((__u32)h->value[0] << 24) | ((__u32)h->value[1] << 16) | ((__u32)h->value[2] << 8) | h->value[3];
	return (id >> INNET_PAXOS_PROPOSER_INCARNATION_BITS) == block;
}

/* trust::check for the Paxos header `h` (`len` bytes of payload): -1 if
 * the role whose row is `allowed` takes it from the frame's sender, else
 * the reason (trust::Reject::index). `acceptor`: the role is an acceptor,
 * which takes 1A/2A only in the sender's own rounds. A REQUEST must name
 * a proposer of its sender's block, a TRIM its sender's learner id. Too
 * short a packet or an unknown type passes: the role's decoder counts it. */
static __always_inline int paxos_admit(void *senders, const __u8 *allowed, int acceptor,
				       const struct innet_paxos_hdr *h, __u32 len, __u32 ifindex, __be32 ip,
				       __be16 port)
{
	if (len < INNET_PAXOS_PACKET_LEN)
		return -1;
	__u16 t = bpf_ntohs(h->msgtype);
	if (t >= INNET_PAXOS_MSG_COUNT)
		return -1;
	__u8 may = allowed[t];
	/* Every class has a bit here; a REQUEST still needs its sender's block. */
	if (may == INNET_PAXOS_CLASS_ANY && t != INNET_PAXOS_MSG_REQUEST)
		return -1;
	if (may == 0)
		return t;
	struct innet_paxos_sender s = paxos_sender(senders, ifindex, ip, port);
	if (!(may & s.class))
		return t;
	if (acceptor && (t == INNET_PAXOS_MSG_1A || t == INNET_PAXOS_MSG_2A) &&
	    (__u8)(bpf_ntohs(h->rnd) & 0xff) != s.issuer)
		return INNET_PAXOS_REJECT_FOREIGN_ROUND;
	if (t == INNET_PAXOS_MSG_REQUEST && !paxos_proposer_in_block(h, s.proposer))
		return INNET_PAXOS_REJECT_FOREIGN_PROPOSER;
	/* A TRIM reports its sender's own checkpoint (trust::trim_in_own_name). */
	if (t == INNET_PAXOS_MSG_TRIM && (s.issuer < INNET_PAXOS_ISSUER_LEARNER_BASE ||
					  bpf_ntohs(h->acptid) != (__u16)(s.issuer - INNET_PAXOS_ISSUER_LEARNER_BASE)))
		return INNET_PAXOS_REJECT_FOREIGN_LEARNER;
	return -1;
}

#endif /* INNET_PAXOS_TRUST_H */
