// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The phase-2B vote counter in front of Paxos learners and proposers (the
 * "learner quorums in the kernel" of CAANS section 6 / Figure 7c, where the
 * learners are the next bottleneck once coordinator and acceptors run in
 * the network), ported line by line from crates/paxos/src/vote_counter.rs
 * (the reference; read its essay first, comments here only say where BPF
 * differs).
 *
 * It runs on the host interfaces the acceptors' votes arrive on. A vote
 * to a counted UDP port (a learner's or a proposer's) is counted in that
 * port's ring; the vote that completes a quorum is rewritten in place into
 * a DECIDED (acptid INNET_PAXOS_COUNTER_ACPTID) and goes up, every other
 * vote is dropped. Everything else goes up unchanged.
 *
 *  - Before a frame to a counted port is looked at, paxos_admit
 *    (innet_paxos_trust.h) applies the rules of the role behind that port
 *    (learner, proposer or backup coordinator: a row of allowed classes per
 *    port) to its sender, looked up by ingress interface, IPv4 source and
 *    UDP source port in counter_senders: a 2B or DECIDED from anyone but an
 *    acceptor is refused and counted in counter_rejected by reason.
 *  - With --auth-key (counter_auth on), a frame to a counted port is taken
 *    only if the Paxos header is followed by a MAC trailer (innet_auth.h)
 *    that checks under either key, before the sender rules and before the
 *    vote is counted (a forged vote never reaches a slot); refused frames
 *    are counted under auth_refused. What goes up as a packet is sealed as
 *    the software runtimes seal what a node sends (innet_live::auth): a
 *    frame passed up unchanged keeps the trailer it came with, a decision
 *    (the rewritten header) is sealed again with the first key, so the
 *    learner's socket checks it like any datagram from a node. A decision
 *    through counter_ring carries no trailer: only this program can write
 *    the ring (a BPF ring buffer is not writable from user space), and it
 *    wrote the record from votes whose trailers it checked, so the reader
 *    trusts the ring as it trusts the kernel it runs in.
 *  - counter_process() is the payload logic: the 48-byte Paxos header in,
 *    rewritten exactly as the Rust program does, pass (1) or drop (0) out.
 *  - xdp_paxos_counter (XDP_PASS / XDP_DROP) and tc_paxos_counter (tc
 *    clsact ingress: TC_ACT_OK / TC_ACT_SHOT) wrap it in Ethernet/IPv4/UDP.
 *    Both exist because generic XDP skips packets a tc program redirected,
 *    and every vote the XDP acceptors multicast is such a packet (a
 *    bpf_clone_redirect copy, bpf/paxos.bpf.c): on the paxos testbed the tc
 *    entry is the one that sees them.
 *
 * Each port's ring is a range of one array map (counter_slots), entry
 * port_index * slots + (inst mod slots). Votes for one instance arrive on
 * every acceptor's device, possibly on different CPUs at once, so a slot is
 * read and written under its bpf_spin_lock (without it two concurrent votes
 * completing a quorum could each see only itself, and the decision would
 * be lost until the learner recovers the instance). Counters are per-entry
 * atomics, outside the lock.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "innet_auth.h"
#include "innet_paxos_learner.h"
#include "innet_paxos_trust.h"
#include "innet_xdp.h"

MAP(counter_config, BPF_MAP_TYPE_ARRAY, 1, struct innet_paxos_counter_config);

/* The rings, resized by the loader to ports * slots. */
MAP(counter_slots, BPF_MAP_TYPE_ARRAY, INNET_PAXOS_COUNTER_SLOTS_DEFAULT, struct innet_paxos_counter_slot);

/* INNET_PAXOS_COUNTER_CTR_*. */
MAP(counter_counters, BPF_MAP_TYPE_ARRAY, INNET_PAXOS_COUNTER_CTR_COUNT, __u64);

/* Who sends the counted ports what (innet_paxos_trust.h; the loader fills
 * it from the deployment), and the frames refused, by
 * trust::Reject::index. */
PAXOS_SENDERS_MAP(counter_senders);
MAP(counter_rejected, BPF_MAP_TYPE_ARRAY, INNET_PAXOS_REJECT_COUNT, __u64);

/* --auth-key (innet_auth.h): off unless the loader turns it on. */
MAP(counter_auth, BPF_MAP_TYPE_ARRAY, 1, struct innet_auth);

/* Decisions up to the host in batches (config.ring): one record per
 * decision (struct innet_paxos_decision); the host reads them from the
 * mapped ring, so one wake-up covers every record that waits. Resized by
 * the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, INNET_PAXOS_COUNTER_RING_BYTES_DEFAULT);
} counter_ring SEC(".maps");

#define PASS 1
#define DROP 0
/* counter_process: the vote decided its instance (the packet now holds
 * the DECIDED). */
#define DECIDED 2

static __always_inline void count(__u32 index)
{
	__u64 *c = bpf_map_lookup_elem(&counter_counters, &index);
	if (c)
		__sync_fetch_and_add(c, 1);
}

static __always_inline struct innet_paxos_counter_config *config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&counter_config, &zero);
}

/* Outcomes of a vote, decided under the slot's lock and counted after. */
enum outcome {
	O_STALE,     /* passed_stale: up */
	O_LATE,	     /* late: drop */
	O_DUPLICATE, /* duplicates: drop */
	O_COUNTED,   /* counted: drop */
	O_DECIDED,   /* decisions: rewrite, up */
};

struct vote {
	__u32 len;
	__u64 w[INNET_PAXOS_VALUE_LEN / 8];
};

static __always_inline int same_vote(const struct innet_paxos_counted_vote *v, __u16 vrnd, const struct vote *x)
{
	const __u64 *w = (const __u64 *)v->value;
	return v->vrnd == vrnd && v->value_len == x->len && w[0] == x->w[0] && w[1] == x->w[1] && w[2] == x->w[2] &&
	       w[3] == x->w[3];
}

/* VoteCounter::on_vote from the slot lookup on, under the slot's lock;
 * `evicted` says whether an undecided instance's votes were forgotten. */
static __always_inline enum outcome on_vote_locked(struct innet_paxos_counter_slot *s,
						   const struct innet_paxos_counter_config *cfg, __u32 a,
						   __u32 inst, __u16 vrnd, const struct vote *x, int *evicted)
{
	if (s->valid && s->inst > inst)
		return O_STALE;
	if (!s->valid || s->inst < inst) {
		if (s->valid && !s->decided && s->voted != 0)
			*evicted = 1;
		s->valid = 1;
		s->inst = inst;
		s->decided = 0;
		s->decided_rnd = 0;
		s->voted = 0;
		__builtin_memset(s->votes, 0, sizeof(s->votes));
	}
	if (s->decided && vrnd <= s->decided_rnd)
		return O_LATE;
	__u32 bit = 1u << a;
	struct innet_paxos_counted_vote *mine = &s->votes[a & (INNET_PAXOS_COUNTER_MAX_ACCEPTORS - 1)];
	if ((s->voted & bit) && mine->vrnd >= vrnd)
		return O_DUPLICATE;
	mine->vrnd = vrnd;
	mine->value_len = x->len;
	__builtin_memcpy(mine->value, x->w, INNET_PAXOS_VALUE_LEN);
	s->voted |= bit;
	__u32 same = 0;
	for (__u32 b = 0; b < INNET_PAXOS_COUNTER_MAX_ACCEPTORS; b++) {
		if (b >= cfg->acceptors)
			break;
		if ((s->voted & (1u << b)) && same_vote(&s->votes[b], vrnd, x))
			same++;
	}
	if (same < cfg->quorum)
		return O_COUNTED;
	s->decided = 1;
	s->decided_rnd = vrnd;
	s->voted = 0;
	__builtin_memset(s->votes, 0, sizeof(s->votes));
	return O_DECIDED;
}

/* VoteCounter::process on the Paxos header `h` (`len` bytes of payload)
 * sent to counted port `k`: PASS, DROP, or DECIDED (pass the rewritten
 * packet up, or its record). */
static __always_inline int counter_process(const struct innet_paxos_counter_config *cfg, __u32 k,
					   struct innet_paxos_hdr *h, __u32 len)
{
	if (len < INNET_PAXOS_PACKET_LEN || bpf_ntohs(h->msgtype) >= INNET_PAXOS_MSG_COUNT ||
	    bpf_ntohl(h->value_len) > INNET_PAXOS_VALUE_LEN) {
		count(INNET_PAXOS_COUNTER_CTR_DECODE_ERRORS);
		return DROP;
	}
	if (bpf_ntohs(h->msgtype) != INNET_PAXOS_MSG_2B) {
		count(INNET_PAXOS_COUNTER_CTR_PASSED);
		return PASS;
	}
	__u32 a = bpf_ntohs(h->acptid);
	if (a >= cfg->acceptors || a >= INNET_PAXOS_COUNTER_MAX_ACCEPTORS) {
		count(INNET_PAXOS_COUNTER_CTR_BAD_ACCEPTOR);
		return DROP;
	}
	__u32 inst = bpf_ntohl(h->inst);
	__u16 vrnd = bpf_ntohs(h->vrnd);
	struct vote x;
	x.len = bpf_ntohl(h->value_len);
	__builtin_memcpy(x.w, h->value, INNET_PAXOS_VALUE_LEN);
	__u32 i = k * cfg->slots + (inst & (cfg->slots - 1));
	struct innet_paxos_counter_slot *s = bpf_map_lookup_elem(&counter_slots, &i);
	if (!s)
		return DROP;
	int evicted = 0;
	bpf_spin_lock(&s->lock);
	enum outcome o = on_vote_locked(s, cfg, a, inst, vrnd, &x, &evicted);
	bpf_spin_unlock(&s->lock);
	if (evicted)
		count(INNET_PAXOS_COUNTER_CTR_EVICTED);
	switch (o) {
	case O_STALE:
		count(INNET_PAXOS_COUNTER_CTR_PASSED_STALE);
		return PASS;
	case O_LATE:
		count(INNET_PAXOS_COUNTER_CTR_LATE);
		return DROP;
	case O_DUPLICATE:
		count(INNET_PAXOS_COUNTER_CTR_DUPLICATES);
		return DROP;
	case O_COUNTED:
		count(INNET_PAXOS_COUNTER_CTR_COUNTED);
		return DROP;
	default:
		h->msgtype = bpf_htons(INNET_PAXOS_MSG_DECIDED);
		h->acptid = bpf_htons(INNET_PAXOS_COUNTER_ACPTID);
		count(INNET_PAXOS_COUNTER_CTR_DECISIONS);
		return DECIDED;
	}
}

/* Hands the decision in `h` (for counted port `k`) to the host through
 * counter_ring: DROP once it is there (the vote's work is done), PASS if
 * the ring is full (the DECIDED packet goes up instead: the socket path
 * takes over, counted). */
static __always_inline int ring_up(const struct innet_paxos_counter_config *cfg, __u32 k,
				   const struct innet_paxos_hdr *h)
{
	struct innet_paxos_decision *d = bpf_ringbuf_reserve(&counter_ring, sizeof(*d), 0);
	if (!d) {
		count(INNET_PAXOS_COUNTER_CTR_RING_FULL);
		return PASS;
	}
	d->port_index = k;
	d->pad = 0;
	__builtin_memcpy(&d->hdr, h, sizeof(d->hdr));
	__u64 flags = 0;
	if (cfg->wakeup) {
		/* Bytes waiting, this record included (8-byte record headers). */
		__u64 waiting = bpf_ringbuf_query(&counter_ring, BPF_RB_AVAIL_DATA);
		flags = waiting >= (__u64)cfg->wakeup * (sizeof(*d) + 8) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	}
	bpf_ringbuf_submit(d, flags);
	count(INNET_PAXOS_COUNTER_CTR_RING);
	return DROP;
}

/* Which counted port `port` (network order) is, or -1. */
static __always_inline int port_index(const struct innet_paxos_counter_config *cfg, __be16 port)
{
	__u16 p = bpf_ntohs(port);
	for (int k = 0; k < INNET_PAXOS_COUNTER_MAX_PORTS; k++) {
		if ((__u32)k >= cfg->ports)
			break;
		if (cfg->port[k] == p)
			return k;
	}
	return -1;
}

/* The verdict on the frame in [data, end), which came in on `ifindex`:
 * PASS or DROP. A rewritten packet's UDP checksum is cleared. */
static __always_inline int frame_verdict(void *data, void *end, struct l234 *l, __u32 ifindex)
{
	struct innet_paxos_counter_config *cfg = config();
	if (!cfg || !parse_l234_at(data, end, l)) {
		count(INNET_PAXOS_COUNTER_CTR_PASSED_OTHER);
		return PASS;
	}
	int k = port_index(cfg, l->udp->dest);
	if (k < 0 || cfg->slots == 0) {
		count(INNET_PAXOS_COUNTER_CTR_PASSED_OTHER);
		return PASS;
	}
	__u32 len = udp_payload_len(l, end);
	struct innet_paxos_hdr *h = (void *)(l->udp + 1);
	if ((void *)(h + 1) > end) {
		count(INNET_PAXOS_COUNTER_CTR_DECODE_ERRORS);
		return DROP;
	}
	/* --auth-key: the header and its trailer exactly, the tag checked
	 * before anything else (innet_live::auth opens before admission). */
	__u32 zero = 0;
	struct innet_auth *auth = bpf_map_lookup_elem(&counter_auth, &zero);
	__u8 *trailer = (__u8 *)(h + 1);
	int keyed = auth && auth->on;
	if (keyed) {
		if (!innet_auth_open_exact(auth, (const __u8 *)h, INNET_PAXOS_PACKET_LEN / 8, len, end)) {
			count(INNET_PAXOS_COUNTER_CTR_AUTH_REFUSED);
			return DROP;
		}
		len = INNET_PAXOS_PACKET_LEN;
	}
	/* The rules of the role behind port k, before the vote is counted. */
	if (k >= INNET_PAXOS_COUNTER_MAX_PORTS)
		return DROP;
	int reason = paxos_admit(&counter_senders, cfg->allowed[k], 0, h, len, ifindex, l->ip->saddr, l->udp->source);
	if (reason >= 0) {
		__u32 r = (__u32)reason;
		__u64 *c = bpf_map_lookup_elem(&counter_rejected, &r);
		if (c)
			__sync_fetch_and_add(c, 1);
		return DROP;
	}
	int v = counter_process(cfg, (__u32)k, h, len);
	if (v != DECIDED)
		return v;
	if (cfg->ring == INNET_PAXOS_COUNTER_RING_SINK) {
		count(INNET_PAXOS_COUNTER_CTR_SUNK);
		return DROP;
	}
	if (cfg->ring == INNET_PAXOS_COUNTER_RING_ON && ring_up(cfg, (__u32)k, h) == DROP)
		return DROP;
	/* Up as a packet: the rewritten header sealed again. */
	if (keyed && (void *)(trailer + INNET_AUTH_TRAILER_LEN) <= end)
		innet_auth_seal(auth, (const __u8 *)h, INNET_PAXOS_PACKET_LEN / 8, trailer);
	l->udp->check = 0; /* optional in IPv4; the payload changed */
	return PASS;
}

SEC("xdp")
int xdp_paxos_counter(struct xdp_md *ctx)
{
	struct l234 l;
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	return frame_verdict(data, end, &l, ctx->ingress_ifindex) == PASS ? XDP_PASS : XDP_DROP;
}

/* Ethernet + IPv4 without options + UDP + the Paxos header and a MAC
 * trailer. */
#define COUNTER_L234_LEN (14 + 20 + 8 + INNET_PAXOS_PACKET_LEN + INNET_AUTH_TRAILER_LEN)

SEC("tc")
int tc_paxos_counter(struct __sk_buff *skb)
{
	/* Headers, Paxos header and trailer in the linear part (as much as
	 * there is: a truncated packet is the payload logic's to count). */
	__u32 want = skb->len < COUNTER_L234_LEN ? skb->len : COUNTER_L234_LEN;
	if (bpf_skb_pull_data(skb, want) < 0)
		return TC_ACT_OK;
	struct l234 l;
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	return frame_verdict(data, end, &l, skb->ifindex) == PASS ? TC_ACT_OK : TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
