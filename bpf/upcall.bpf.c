// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Decisions up: four ways for an XDP program to hand a decided Paxos
 * instance (one DECIDED message, innet_paxos.h) to a user-space learner,
 * measured side by side by `innet bench xdp-upcall`
 * (crates/xdp/src/upcall.rs, docs/xdp.md "Decisions up").
 *
 *  - xdp_upcall: attached (driver mode) to the learner host's veth. Every
 *    decision (UDP to the learner port, a 48-byte DECIDED payload) goes up
 *    by the path in upcall_config: XDP_PASS (one datagram into the
 *    learner's socket), a batch datagram, a ring buffer record or an
 *    AF_XDP socket. Nothing is lost on the way out of XDP: when the ring
 *    is full or no AF_XDP socket is bound, the decision is passed to the
 *    socket instead, and counted.
 *  - xdp_upcall_gen: the in-kernel generator, run by BPF_PROG_TEST_RUN
 *    with BPF_F_TEST_XDP_LIVE_FRAMES on the sender's veth. The kernel
 *    recycles its frame pages without writing the template again, so the
 *    program stamps every frame itself: the next instance number and
 *    bpf_ktime_get_ns() (CLOCK_MONOTONIC) in the value's first 8 bytes
 *    (little endian); XDP_TX sends it to the learner's veth.
 *
 * Neither is a protocol role: no Rust reference, no differential test. The
 * benchmark's consumer checks that every decision arrives once and in order.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "innet_paxos.h"
#include "innet_upcall.h"
#include "innet_xdp.h"

/* What xdp_upcall does: one entry. */
MAP(upcall_config, BPF_MAP_TYPE_ARRAY, 1, struct upcall_config);
/* INNET_UPCALL_CTR_*, per CPU. */
MAP(upcall_counters, BPF_MAP_TYPE_PERCPU_ARRAY, INNET_UPCALL_CTR_COUNT, __u64);
/* Decisions held for the next batch datagram. */
MAP(upcall_batch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, struct upcall_batch);
/* The generator's instance counter. */
MAP(upcall_gen, BPF_MAP_TYPE_ARRAY, 1, struct upcall_gen);
/* AF_XDP sockets by receive queue. */
MAP(upcall_xsks, BPF_MAP_TYPE_XSKMAP, INNET_UPCALL_XSK_QUEUES, __u32);

/* Decision records for the learner; the loader sets the size. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, INNET_UPCALL_RING_BYTES_DEFAULT);
} upcall_ring SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *c = bpf_map_lookup_elem(&upcall_counters, &i);
	if (c)
		*c += 1;
}

/* The UDP payload of a decision (UDP to the learner port carrying one
 * DECIDED message, all 48 bytes within [data, end)), or NULL. */
static __always_inline __u8 *decision_at(struct xdp_md *ctx)
{
	void *end = (void *)(long)ctx->data_end;
	struct l234 l;
	if (!parse_l234_at((void *)(long)ctx->data, end, &l) || l.udp->dest != bpf_htons(INNET_PAXOS_LEARNER_PORT))
		return NULL;
	__u8 *p = (__u8 *)(l.udp + 1);
	if (udp_payload_len(&l, end) != INNET_PAXOS_PACKET_LEN || (void *)(p + INNET_PAXOS_PACKET_LEN) > end)
		return NULL;
	if (p[INNET_PAXOS_OFF_MSGTYPE] != 0 || p[INNET_PAXOS_OFF_MSGTYPE + 1] != INNET_PAXOS_MSG_DECIDED)
		return NULL;
	return p;
}

/* The ring path: one record per decision, or the socket if the ring is
 * full (counted: the learner reads both, so nothing is lost). */
static __always_inline int to_ring(struct xdp_md *ctx, __u32 off, __u32 wake_threshold)
{
	void *rec = bpf_ringbuf_reserve(&upcall_ring, INNET_UPCALL_RECORD_LEN, 0);
	if (!rec) {
		count(INNET_UPCALL_CTR_RING_FULL);
		return XDP_PASS;
	}
	if (bpf_xdp_load_bytes(ctx, off, rec, INNET_UPCALL_RECORD_LEN)) {
		bpf_ringbuf_discard(rec, BPF_RB_NO_WAKEUP);
		count(INNET_UPCALL_CTR_RING_FULL);
		return XDP_PASS;
	}
	__u64 flags = 0;
	if (wake_threshold) {
		/* Reserved but unread records, this one included. */
		__u64 unread = bpf_ringbuf_query(&upcall_ring, BPF_RB_AVAIL_DATA) / INNET_UPCALL_RECORD_STRIDE;
		flags = unread == wake_threshold ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
		if (unread == wake_threshold)
			count(INNET_UPCALL_CTR_RING_WAKEUPS_FORCED);
	}
	bpf_ringbuf_submit(rec, flags);
	count(INNET_UPCALL_CTR_RING_RECORDS);
	return XDP_DROP;
}

/* Rewrites the lengths and the IP checksum of a frame whose UDP payload
 * became `payload_len` bytes; 0 if the headers are gone. */
static __always_inline int set_payload_len(struct xdp_md *ctx, __u32 payload_len)
{
	struct l234 l;
	if (!parse_l234_at((void *)(long)ctx->data, (void *)(long)ctx->data_end, &l))
		return 0;
	l.ip->tot_len = bpf_htons(sizeof(struct iphdr) + sizeof(struct udphdr) + payload_len);
	l.udp->len = bpf_htons(sizeof(struct udphdr) + payload_len);
	l.udp->check = 0;
	ip_checksum(l.ip);
	return 1;
}

/* The batch path: hold decisions; the `batch`-th grows its frame and
 * carries the held ones and itself up, oldest first, as one datagram of
 * concatenated DECIDED messages. A frame without the tailroom for that
 * (one that came from a socket: veth copies its skb into a small page
 * fragment) is held too, and the next frame tries again, so the order
 * holds; only with BATCH_MAX held does a frame without tailroom go up
 * alone (counted). A global function, so that its loop is verified once. */
__noinline int to_batch(struct xdp_md *ctx, __u32 off, __u32 batch)
{
	__u32 zero = 0;
	struct upcall_batch *b = bpf_map_lookup_elem(&upcall_batch, &zero);
	if (!ctx || !b)
		return XDP_PASS;
	__u32 held = b->count;
	if (held >= INNET_UPCALL_BATCH_MAX)
		held = INNET_UPCALL_BATCH_MAX - 1; /* cannot happen: count stays below BATCH_MAX */
	if (held + 1 < batch) {
		if (bpf_xdp_load_bytes(ctx, off, &b->decisions[held * INNET_PAXOS_PACKET_LEN], INNET_PAXOS_PACKET_LEN))
			return XDP_PASS;
		b->count = held + 1;
		count(INNET_UPCALL_CTR_BATCH_HELD);
		return XDP_DROP;
	}
	if (held == 0) {
		count(INNET_UPCALL_CTR_BATCH_PACKETS);
		return XDP_PASS;
	}
	__u8 last[INNET_PAXOS_PACKET_LEN];
	if (bpf_xdp_load_bytes(ctx, off, last, sizeof(last)))
		return XDP_PASS;
	if (bpf_xdp_adjust_tail(ctx, (int)(held * INNET_PAXOS_PACKET_LEN))) {
		count(INNET_UPCALL_CTR_BATCH_GROW_FAILED);
		if (held + 1 < INNET_UPCALL_BATCH_MAX) {
			__builtin_memcpy(&b->decisions[held * INNET_PAXOS_PACKET_LEN], last, sizeof(last));
			b->count = held + 1;
			return XDP_DROP;
		}
		count(INNET_UPCALL_CTR_BATCH_OVERFLOW);
		return XDP_PASS;
	}
	for (__u32 i = 0; i < INNET_UPCALL_BATCH_MAX; i++) {
		if (i >= held)
			break;
		if (bpf_xdp_store_bytes(ctx, off + i * INNET_PAXOS_PACKET_LEN, &b->decisions[i * INNET_PAXOS_PACKET_LEN],
					INNET_PAXOS_PACKET_LEN))
			return XDP_DROP; /* cannot happen: the frame was grown for them */
	}
	if (bpf_xdp_store_bytes(ctx, off + held * INNET_PAXOS_PACKET_LEN, last, sizeof(last)))
		return XDP_DROP;
	if (!set_payload_len(ctx, (held + 1) * INNET_PAXOS_PACKET_LEN))
		return XDP_DROP;
	b->count = 0;
	count(INNET_UPCALL_CTR_BATCH_PACKETS);
	return XDP_PASS;
}

SEC("xdp")
int xdp_upcall(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct upcall_config *cfg = bpf_map_lookup_elem(&upcall_config, &zero);
	__u8 *p = decision_at(ctx);
	if (!cfg || !p) {
		count(INNET_UPCALL_CTR_OTHER);
		return XDP_PASS;
	}
	__u32 off = (__u32)(p - (__u8 *)(long)ctx->data);
	count(INNET_UPCALL_CTR_DECISIONS);
	switch (cfg->path) {
	case INNET_UPCALL_PATH_BATCH:
		return to_batch(ctx, off, cfg->batch);
	case INNET_UPCALL_PATH_RING:
		return to_ring(ctx, off, cfg->wake_threshold);
	case INNET_UPCALL_PATH_XSK: {
		int action = bpf_redirect_map(&upcall_xsks, ctx->rx_queue_index, XDP_PASS);
		count(action == XDP_REDIRECT ? INNET_UPCALL_CTR_XSK_REDIRECTS : INNET_UPCALL_CTR_XSK_FALLBACK);
		return action;
	}
	case INNET_UPCALL_PATH_DROP:
		count(INNET_UPCALL_CTR_DROPPED);
		return XDP_DROP;
	default:
		count(INNET_UPCALL_CTR_PASSED);
		return XDP_PASS;
	}
}

/* Also attached (driver mode) to the sending veth, which keeps it in the
 * kernel's XDP dispatcher (see crates/xdp/src/upcall.rs) and gives that
 * veth the XDP program a peer needs; nothing addressed there is a
 * decision, so all of it passes. */
SEC("xdp")
int xdp_upcall_gen(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct upcall_gen *g = bpf_map_lookup_elem(&upcall_gen, &zero);
	__u8 *p = decision_at(ctx);
	if (!g || !p)
		return XDP_PASS;
	__u32 inst = (__u32)__sync_fetch_and_add(&g->next_instance, 1);
	__u32 inst_be = bpf_htonl(inst);
	__u64 stamp = bpf_ktime_get_ns();
	__builtin_memcpy(p + INNET_PAXOS_OFF_INST, &inst_be, sizeof(inst_be));
	__builtin_memcpy(p + INNET_PAXOS_OFF_VALUE, &stamp, sizeof(stamp));
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
