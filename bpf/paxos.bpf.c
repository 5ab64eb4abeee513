// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The Paxos (CAANS) data-plane roles in BPF: the coordinator and the
 * acceptor, ported line by line from crates/paxos/src/coordinator.rs and
 * acceptor.rs (the reference; read their essays first, comments here only
 * say where BPF differs). CAANS section 3 / Figure 1: the coordinator turns
 * a REQUEST into a 2A for its next instance and multicasts it to the
 * acceptors; an acceptor votes (2B) and multicasts the vote to the learners.
 *
 * One object holds both roles; a loader loads one object per role instance
 * (its own maps) and writes the role into paxos_config.
 *
 *  - coordinator_process() / acceptor_process() are the payload logic: the
 *    48-byte Paxos header in, rewritten exactly as the Rust program does,
 *    an INNET_PAXOS_VERDICT_* out.
 *  - With --auth-key (paxos_auth on), a frame is taken only if the header
 *    is followed by a MAC trailer (innet_auth.h) that checks, counted
 *    under auth_refused otherwise; what the role sends on is sealed again.
 *  - Before either sees a header, paxos_admit (innet_paxos_trust.h) refuses
 *    a message type its sender may not send to the role, or a 1A/2A not in
 *    the sender's own round, as the runtimes do before the Rust roles
 *    (innet_paxos::trust): the sender is looked up by ingress interface,
 *    IPv4 source and UDP source port in paxos_senders, and each refusal is
 *    counted in paxos_rejected by reason.
 *  - xdp_paxos_coordinator / xdp_paxos_acceptor wrap them in Ethernet/IPv4/
 *    UDP (to the data-plane port; anything else is XDP_PASS): Drop is
 *    XDP_DROP; Reflect (coordinator: HEARTBEAT, TRIM -> WINDOW) and Origin
 *    (acceptor: 1B back to whoever sent the 1A) swap addresses and XDP_TX;
 *    Multicast puts 4 bytes of XDP metadata (magic, group) in front of the
 *    frame and returns XDP_PASS.
 *  - How a Multicast verdict leaves is the config's choice (mcast):
 *    INNET_PAXOS_MCAST_DEVMAP redirects the frame to the devmap
 *    paxos_ports with BPF_F_BROADCAST (Linux 5.13+): the kernel copies it
 *    to every member's device, xdp_paxos_egress (each entry's egress
 *    program) rewrites each copy to the member's MAC/IP/port, and the
 *    copies stay xdp_frames, meeting the next hop's XDP program in driver
 *    mode: no skb, no tc. INNET_PAXOS_MCAST_TC (several members behind
 *    one device, the per-port votes of old): the XDP program marks the
 *    frame and passes it; tc_paxos (tc clsact ingress, same device) sends
 *    one bpf_clone_redirect copy per paxos_members entry, then drops the
 *    original. Copies made that way skip generic XDP on the next hop, so
 *    tc_paxos also runs the role itself on Paxos frames XDP did not see.
 *
 * State is shared by all CPUs without locks, as in the transaction switch:
 * exact equivalence with the sequential reference holds one packet at a time
 * (BPF_PROG_TEST_RUN, the differential test). Under concurrent receive the
 * coordinator's instance counter is taken with an atomic fetch-add, so two
 * requests never get one instance (the property Paxos round 1 relies on).
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
#include "innet_paxos.h"
#include "innet_paxos_trust.h"
#include "innet_xdp.h"

/* Role, port, ring size, learners, round or acceptor id, group (loader). */
MAP(paxos_config, BPF_MAP_TYPE_ARRAY, 1, struct innet_paxos_config);

/* Scalar registers: next instance, trim floor, learners' checkpoints. */
MAP(paxos_state, BPF_MAP_TYPE_ARRAY, 1, struct innet_paxos_state);

/* The acceptor's ring of slots (resized by the loader to config.slots). */
MAP(paxos_slots, BPF_MAP_TYPE_ARRAY, INNET_PAXOS_ACCEPTOR_SLOTS_DEFAULT, struct innet_paxos_slot);

/* Every decision counted (INNET_PAXOS_*_CTR_*). */
MAP(paxos_counters, BPF_MAP_TYPE_ARRAY, INNET_PAXOS_CTR_COUNT, __u64);

/* Where this role's multicast copies go (config.members entries). */
MAP(paxos_members, BPF_MAP_TYPE_ARRAY, INNET_PAXOS_MAX_MEMBERS, struct innet_paxos_member);

/* INNET_PAXOS_MCAST_DEVMAP: the members' egress devices (ifindex ->
 * { ifindex, xdp_paxos_egress }), which a broadcast redirect copies the
 * frame to, and the member on each device, by ifindex, for the egress
 * program's rewrite. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, INNET_PAXOS_MAX_MEMBERS);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} paxos_ports SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, INNET_PAXOS_MAX_MEMBERS);
	__type(key, __u32);
	__type(value, struct innet_paxos_member);
} paxos_member_at SEC(".maps");

/* Who sends this role what (innet_paxos_trust.h; the loader fills it from
 * the deployment), and the frames refused, by trust::Reject::index. */
PAXOS_SENDERS_MAP(paxos_senders);
MAP(paxos_rejected, BPF_MAP_TYPE_ARRAY, INNET_PAXOS_REJECT_COUNT, __u64);

/* --auth-key (innet_auth.h): off unless the loader turns it on. */
MAP(paxos_auth, BPF_MAP_TYPE_ARRAY, 1, struct innet_auth);

struct meta {
	__u16 magic;
	__u16 group;
};

static __always_inline void count(__u32 index)
{
	__u64 *c = bpf_map_lookup_elem(&paxos_counters, &index);
	if (c)
		__sync_fetch_and_add(c, 1);
}

static __always_inline struct innet_paxos_config *config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&paxos_config, &zero);
}

static __always_inline struct innet_paxos_state *state(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&paxos_state, &zero);
}

/* ---- the Paxos header ------------------------------------------------ */

/* PaxosPacket::parse: 0 if valid, else counts a decode error. */
static __always_inline int valid_header(const struct innet_paxos_hdr *h, __u32 len)
{
	if (len < INNET_PAXOS_PACKET_LEN)
		return 0;
	if (bpf_ntohs(h->msgtype) >= INNET_PAXOS_MSG_COUNT)
		return 0;
	return bpf_ntohl(h->value_len) <= INNET_PAXOS_VALUE_LEN;
}

struct paxos_value {
	__u32 len; /* host order */
	__u64 w[INNET_PAXOS_VALUE_LEN / 8];
};

static __always_inline struct paxos_value value_of(const __u8 *bytes, __u32 len)
{
	struct paxos_value v;
	v.len = len;
	__builtin_memcpy(v.w, bytes, sizeof(v.w));
	return v;
}

static __always_inline int paxos_value_eq(const struct paxos_value *a, const struct paxos_value *b)
{
	return a->len == b->len && a->w[0] == b->w[0] && a->w[1] == b->w[1] && a->w[2] == b->w[2] &&
	       a->w[3] == b->w[3];
}

/* ---- TrimFloor -------------------------------------------------------- */

/* How many of the first `n` learners' checkpoints are at least `x`. A
 * global function: verified once, on its own (inlined into the outer loop
 * below, the state space exceeded the verifier's 1M-instruction limit). */
__noinline int checkpoints_at_least(__u32 x, __u32 n)
{
	struct innet_paxos_state *st = state();
	if (!st)
		return 0;
	int at_least = 0;
	for (__u32 b = 0; b < INNET_PAXOS_MAX_LEARNERS; b++) {
		if (b >= n)
			break;
		if (st->checkpoints[b] >= x)
			at_least++;
	}
	return at_least;
}

/* TrimFloor::report: learner `learner` checkpointed every instance below
 * `inst`; 0 for an unknown learner. The floor is the quorum-th largest
 * report (MAX_LEARNERS^2 steps at most), never moving back. */
static __always_inline int trim_report(struct innet_paxos_state *st, const struct innet_paxos_config *cfg,
				       __u16 learner, __u32 inst)
{
	__u32 n = cfg->learners;
	if (learner >= n || learner >= INNET_PAXOS_MAX_LEARNERS)
		return 0;
	if (st->checkpoints[learner] < inst)
		st->checkpoints[learner] = inst;
	for (__u32 a = 0; a < INNET_PAXOS_MAX_LEARNERS; a++) {
		if (a >= n)
			break;
		__u32 x = st->checkpoints[a];
		if ((__u32)checkpoints_at_least(x, n) >= cfg->trim_quorum && x > st->floor)
			st->floor = x;
	}
	return 1;
}

/* ---- the coordinator (coordinator.rs, DataPlane::process) -------------- */

static __always_inline int coordinator_process(struct innet_paxos_hdr *h, __u32 len)
{
	struct innet_paxos_config *cfg = config();
	struct innet_paxos_state *st = state();
	if (!cfg || !st)
		return INNET_PAXOS_VERDICT_DROP;
	if (!valid_header(h, len)) {
		count(INNET_PAXOS_COORD_CTR_DECODE_ERRORS);
		return INNET_PAXOS_VERDICT_DROP;
	}
	switch (bpf_ntohs(h->msgtype)) {
	case INNET_PAXOS_MSG_REQUEST: {
		/* Instance u32::MAX is never handed out. */
		if ((__u64)st->next >= (__u64)st->floor + cfg->slots || st->next == 0xffffffffu) {
			count(INNET_PAXOS_COORD_CTR_WINDOW_FULL);
			return INNET_PAXOS_VERDICT_DROP;
		}
		__u32 inst = __sync_fetch_and_add(&st->next, 1);
		if (inst == 0xffffffffu) {
			/* Two CPUs raced past the check above: undo the wrap. */
			st->next = 0xffffffffu;
			count(INNET_PAXOS_COORD_CTR_WINDOW_FULL);
			return INNET_PAXOS_VERDICT_DROP;
		}
		h->msgtype = bpf_htons(INNET_PAXOS_MSG_2A);
		h->inst = bpf_htonl(inst);
		h->rnd = bpf_htons(cfg->round);
		h->vrnd = 0;
		h->acptid = 0;
		count(INNET_PAXOS_COORD_CTR_REQUESTS);
		return INNET_PAXOS_VERDICT_MULTICAST;
	}
	case INNET_PAXOS_MSG_HEARTBEAT:
		count(INNET_PAXOS_COORD_CTR_HEARTBEATS);
		return INNET_PAXOS_VERDICT_REFLECT;
	case INNET_PAXOS_MSG_TRIM:
		if (!trim_report(st, cfg, bpf_ntohs(h->acptid), bpf_ntohl(h->inst))) {
			count(INNET_PAXOS_COORD_CTR_IGNORED);
			return INNET_PAXOS_VERDICT_DROP;
		}
		count(INNET_PAXOS_COORD_CTR_TRIMS);
		h->msgtype = bpf_htons(INNET_PAXOS_MSG_WINDOW);
		h->inst = bpf_htonl(st->next);
		return INNET_PAXOS_VERDICT_REFLECT;
	default:
		count(INNET_PAXOS_COORD_CTR_IGNORED);
		return INNET_PAXOS_VERDICT_DROP;
	}
}

/* ---- the acceptor (acceptor.rs, DataPlane::process) -------------------- */

/* Acceptor::slot_for: the slot for `inst`, taken over if allowed; 0 if the
 * instance was trimmed or lies beyond the ring. */
static __always_inline struct innet_paxos_slot *slot_for(const struct innet_paxos_config *cfg,
							 const struct innet_paxos_state *st, __u32 inst)
{
	__u32 i = inst & (cfg->slots - 1);
	struct innet_paxos_slot *s = bpf_map_lookup_elem(&paxos_slots, &i);
	if (!s)
		return 0;
	if (s->valid && s->inst == inst)
		return s;
	if (s->valid && s->inst > inst) {
		count(INNET_PAXOS_ACC_CTR_TRIMMED);
		return 0;
	}
	if ((__u64)inst >= (__u64)st->floor + cfg->slots) {
		count(INNET_PAXOS_ACC_CTR_RING_FULL);
		return 0;
	}
	__builtin_memset(s, 0, sizeof(*s));
	s->valid = 1;
	s->inst = inst;
	s->rnd = INNET_PAXOS_ROUND_INIT;
	return s;
}

static __always_inline int acceptor_process(struct innet_paxos_hdr *h, __u32 len)
{
	struct innet_paxos_config *cfg = config();
	struct innet_paxos_state *st = state();
	if (!cfg || !st)
		return INNET_PAXOS_VERDICT_DROP;
	if (!valid_header(h, len)) {
		count(INNET_PAXOS_ACC_CTR_DECODE_ERRORS);
		return INNET_PAXOS_VERDICT_DROP;
	}
	__u32 inst = bpf_ntohl(h->inst);
	__u16 rnd = bpf_ntohs(h->rnd);
	struct innet_paxos_slot *s;
	switch (bpf_ntohs(h->msgtype)) {
	case INNET_PAXOS_MSG_1A:
		s = slot_for(cfg, st, inst);
		if (!s)
			return INNET_PAXOS_VERDICT_DROP;
		if (rnd < s->rnd) {
			count(INNET_PAXOS_ACC_CTR_STALE_ROUND);
			return INNET_PAXOS_VERDICT_DROP;
		}
		s->rnd = rnd;
		h->msgtype = bpf_htons(INNET_PAXOS_MSG_1B);
		h->vrnd = bpf_htons(s->vrnd);
		h->acptid = bpf_htons(cfg->acceptor_id);
		h->value_len = bpf_htonl(s->value_len);
		__builtin_memcpy(h->value, s->value, INNET_PAXOS_VALUE_LEN);
		count(INNET_PAXOS_ACC_CTR_PROMISES);
		return INNET_PAXOS_VERDICT_ORIGIN;
	case INNET_PAXOS_MSG_2A: {
		s = slot_for(cfg, st, inst);
		if (!s)
			return INNET_PAXOS_VERDICT_DROP;
		if (rnd < s->rnd) {
			count(INNET_PAXOS_ACC_CTR_STALE_ROUND);
			return INNET_PAXOS_VERDICT_DROP;
		}
		struct paxos_value v = value_of(h->value, bpf_ntohl(h->value_len));
		struct paxos_value held = value_of(s->value, s->value_len);
		if (s->vrnd == rnd && !paxos_value_eq(&held, &v)) {
			count(INNET_PAXOS_ACC_CTR_CONFLICTING);
			return INNET_PAXOS_VERDICT_DROP;
		}
		s->rnd = rnd;
		s->vrnd = rnd;
		s->value_len = v.len;
		__builtin_memcpy(s->value, v.w, INNET_PAXOS_VALUE_LEN);
		h->msgtype = bpf_htons(INNET_PAXOS_MSG_2B);
		h->vrnd = bpf_htons(rnd);
		h->acptid = bpf_htons(cfg->acceptor_id);
		count(INNET_PAXOS_ACC_CTR_VOTES);
		return INNET_PAXOS_VERDICT_MULTICAST;
	}
	case INNET_PAXOS_MSG_TRIM:
		if (trim_report(st, cfg, bpf_ntohs(h->acptid), inst))
			count(INNET_PAXOS_ACC_CTR_TRIMS);
		else
			count(INNET_PAXOS_ACC_CTR_IGNORED);
		return INNET_PAXOS_VERDICT_DROP;
	default:
		count(INNET_PAXOS_ACC_CTR_IGNORED);
		return INNET_PAXOS_VERDICT_DROP;
	}
}

/* ---- Ethernet / IPv4 / UDP ------------------------------------------- */

/* Ethernet + IPv4 without options + UDP + the Paxos header. */
struct l234_len {
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
	struct innet_paxos_hdr paxos;
} __attribute__((packed));

/* The headers of a UDP datagram to `port`, or 0 for other traffic. */
static __always_inline int paxos_parse(void *data, void *end, __u32 port, struct l234 *l)
{
	return parse_l234_at(data, end, l) && l->udp->dest == bpf_htons(port);
}

/* The role's verdict on the Paxos header after `l`, which came in on
 * `ifindex` (a truncated one is PaxosPacket::parse's Truncated, counted by
 * the role; one its sender may not send is refused first, as the runtimes
 * refuse it before the Rust role sees it). */
static __always_inline int role_verdict(struct l234 *l, void *end, __u32 role, __u32 ifindex,
					const struct innet_paxos_config *cfg)
{
	__u32 avail = (__u32)(end - (void *)(l->udp + 1));
	__u32 udp_len = bpf_ntohs(l->udp->len);
	__u32 len = udp_len >= sizeof(struct udphdr) ? udp_len - sizeof(struct udphdr) : 0;
	if (len > avail)
		len = avail;
	struct innet_paxos_hdr *h = (void *)(l->udp + 1);
	if ((void *)(h + 1) > end || len < INNET_PAXOS_PACKET_LEN) {
		count(role == INNET_PAXOS_ROLE_COORDINATOR ? INNET_PAXOS_COORD_CTR_DECODE_ERRORS
							   : INNET_PAXOS_ACC_CTR_DECODE_ERRORS);
		return INNET_PAXOS_VERDICT_DROP;
	}
	/* --auth-key: the header and its trailer exactly, the tag checked
	 * before anything else (innet_live::auth); the header that leaves is
	 * sealed again, as the runtimes seal what they send. */
	__u32 zero = 0;
	struct innet_auth *auth = bpf_map_lookup_elem(&paxos_auth, &zero);
	__u8 *trailer = (__u8 *)(h + 1);
	if (auth && auth->on) {
		if (!innet_auth_open_exact(auth, (const __u8 *)h, INNET_PAXOS_PACKET_LEN / 8, len, end)) {
			count(INNET_PAXOS_CTR_AUTH_REFUSED);
			return INNET_PAXOS_VERDICT_DROP;
		}
		len = INNET_PAXOS_PACKET_LEN;
	}
	int reason = paxos_admit(&paxos_senders, cfg->allowed, role == INNET_PAXOS_ROLE_ACCEPTOR, h, len, ifindex,
				 l->ip->saddr, l->udp->source);
	if (reason >= 0) {
		__u32 r = (__u32)reason;
		__u64 *c = bpf_map_lookup_elem(&paxos_rejected, &r);
		if (c)
			__sync_fetch_and_add(c, 1);
		return INNET_PAXOS_VERDICT_DROP;
	}
	int verdict = role == INNET_PAXOS_ROLE_COORDINATOR ? coordinator_process(h, len) : acceptor_process(h, len);
	if (auth && auth->on && verdict != INNET_PAXOS_VERDICT_DROP && (void *)(trailer + INNET_AUTH_TRAILER_LEN) <= end)
		innet_auth_seal(auth, (const __u8 *)h, INNET_PAXOS_PACKET_LEN / 8, trailer);
	return verdict;
}

/* One role's XDP program: payload logic on the header, verdict to action. */
static __always_inline int xdp_role(struct xdp_md *ctx, __u32 role)
{
	struct innet_paxos_config *cfg = config();
	if (!cfg || cfg->role != role)
		return XDP_PASS;
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct l234 l;
	if (!paxos_parse(data, end, cfg->udp_port, &l)) {
		count(INNET_PAXOS_CTR_XDP_PASSED_OTHER);
		return XDP_PASS;
	}
	int verdict = role_verdict(&l, end, role, ctx->ingress_ifindex, cfg);
	switch (verdict) {
	case INNET_PAXOS_VERDICT_REFLECT:
	case INNET_PAXOS_VERDICT_ORIGIN:
		l.udp->check = 0; /* optional in IPv4; the payload changed */
		swap_addresses(&l);
		return XDP_TX;
	case INNET_PAXOS_VERDICT_MULTICAST: {
		l.udp->check = 0;
		if (cfg->mcast == INNET_PAXOS_MCAST_DEVMAP)
			return bpf_redirect_map(&paxos_ports, 0, BPF_F_BROADCAST);
		__u16 group = cfg->group;
		if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct meta)) < 0)
			return XDP_DROP;
		struct meta *m = (void *)(long)ctx->data_meta;
		if ((void *)(m + 1) > (void *)(long)ctx->data)
			return XDP_DROP;
		m->magic = INNET_PAXOS_META_MAGIC;
		m->group = group;
		return XDP_PASS;
	}
	default:
		return XDP_DROP;
	}
}

SEC("xdp")
int xdp_paxos_coordinator(struct xdp_md *ctx)
{
	return xdp_role(ctx, INNET_PAXOS_ROLE_COORDINATOR);
}

SEC("xdp")
int xdp_paxos_acceptor(struct xdp_md *ctx)
{
	return xdp_role(ctx, INNET_PAXOS_ROLE_ACCEPTOR);
}

/* ---- multicast by devmap broadcast ----------------------------------- */

/* Rewrites the frame in [data, end) for member `m` (a copy of a
 * multicast): 0 if the headers are not there. */
static __always_inline int address_to(void *data, void *end, const struct innet_paxos_member *m)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || ip->ihl != 5)
		return 0;
	__builtin_memcpy(eth->h_dest, m->dst_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, m->src_mac, ETH_ALEN);
	ip->saddr = m->src_ip;
	ip->daddr = m->dst_ip;
	ip_checksum(ip);
	udp->dest = bpf_htons(m->dst_port);
	udp->check = 0;
	return 1;
}

/* The egress program of every paxos_ports entry: the kernel runs it on
 * each copy a broadcast redirect makes, as it leaves for `egress_ifindex`;
 * it rewrites the copy to the member on that device (the rewrite
 * tc_paxos makes of each clone). */
SEC("xdp/devmap")
int xdp_paxos_egress(struct xdp_md *ctx)
{
	__u32 ifindex = ctx->egress_ifindex;
	struct innet_paxos_member *m = bpf_map_lookup_elem(&paxos_member_at, &ifindex);
	if (!m || !address_to((void *)(long)ctx->data, (void *)(long)ctx->data_end, m)) {
		count(INNET_PAXOS_CTR_MULTICAST_ERRORS);
		return XDP_DROP;
	}
	count(INNET_PAXOS_CTR_EGRESS_COPIES);
	return XDP_PASS;
}

/* ---- multicast (tc clsact ingress) ------------------------------------ */

/* Sends one copy per paxos_members entry, each rewritten to the member. */
static __always_inline int multicast(struct __sk_buff *skb, const struct innet_paxos_config *cfg)
{
	__u32 members = cfg->members;
	/* Unrolled: a loop counter kept across bpf_clone_redirect spills to
	 * the stack imprecisely and the verifier calls the loop infinite. */
#pragma unroll
	for (__u32 i = 0; i < INNET_PAXOS_MAX_MEMBERS; i++) {
		__u32 k = i;
		struct innet_paxos_member *m = i < members ? bpf_map_lookup_elem(&paxos_members, &k) : 0;
		if (!m || !address_to((void *)(long)skb->data, (void *)(long)skb->data_end, m))
			continue;
		if (bpf_clone_redirect(skb, m->ifindex, 0) == 0)
			count(INNET_PAXOS_CTR_MULTICAST_COPIES);
		else
			count(INNET_PAXOS_CTR_MULTICAST_ERRORS);
	}
	return TC_ACT_SHOT;
}

/*
 * tc clsact ingress, on every device the role's XDP program is on.
 *  - A frame the XDP program marked (metadata: magic, group) is multicast.
 *    The mark is consumed first: the clones share the buffer it lives in.
 *  - Any other Paxos frame is one the XDP program never saw: generic XDP
 *    skips packets that a tc program redirected (every copy the previous
 *    hop's multicast made), so the role's logic runs here instead, the same
 *    coordinator_process / acceptor_process, and the verdict becomes a tc
 *    action: Reflect/Origin back out of the ingress device, Multicast as
 *    above, Drop.
 */
SEC("tc")
int tc_paxos(struct __sk_buff *skb)
{
	struct innet_paxos_config *cfg = config();
	if (!cfg)
		return TC_ACT_OK;
	struct meta *meta = (void *)(long)skb->data_meta;
	if ((void *)(meta + 1) <= (void *)(long)skb->data && meta->magic == INNET_PAXOS_META_MAGIC &&
	    meta->group == cfg->group) {
		meta->magic = 0;
		return multicast(skb, cfg);
	}
	/* Headers and Paxos header in the linear part (as much as there is:
	 * a truncated packet is the payload logic's to count). */
	__u32 most = sizeof(struct l234_len) + INNET_AUTH_TRAILER_LEN;
	__u32 want = skb->len < most ? skb->len : most;
	if (bpf_skb_pull_data(skb, want) < 0)
		return TC_ACT_OK;
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct l234 l;
	if (!paxos_parse(data, end, cfg->udp_port, &l))
		return TC_ACT_OK;
	int verdict = role_verdict(&l, end, cfg->role, skb->ifindex, cfg);
	switch (verdict) {
	case INNET_PAXOS_VERDICT_REFLECT:
	case INNET_PAXOS_VERDICT_ORIGIN:
		l.udp->check = 0;
		swap_addresses(&l);
		return bpf_redirect(skb->ifindex, 0);
	case INNET_PAXOS_VERDICT_MULTICAST:
		l.udp->check = 0;
		return multicast(skb, cfg);
	default:
		return TC_ACT_SHOT;
	}
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
