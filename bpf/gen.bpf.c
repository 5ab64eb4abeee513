// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The in-kernel load generator of the fabric-only benchmarks (`innet bench
 * xdp-paxos --fabric-only`, `xdp-txn --fabric-only`, `xdp-chain
 * --fabric-only`; crates/xdp/src/generator.rs): BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES runs xdp_gen on frames the kernel hands out
 * from a page pool, as if each had arrived on the chosen device, and what
 * the program returns really happens (XDP_TX and redirects transmit).
 *
 * The kernel initialises a page's frame once and does not restore it when
 * the page comes back to the pool, and every role rewrites the frame it
 * is given (a REQUEST becomes a 2A, a request a reply). So xdp_gen writes
 * the template (gen_config.frame: a whole Ethernet/IPv4/UDP frame, the
 * request a client or proposer would send) over the frame first, stamps a
 * running number at gen_config.stamp_at if asked (a request id, so
 * requests differ), then tail-calls the role's own program (gen_target[0],
 * loaded and configured by the testbed), which decides as it does for a
 * frame from the wire: no copy of the role's logic here.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "innet_xdp.h"

/* Every generated frame is this long: the template, padded with zeros
 * (the roles read the UDP length, not the frame's: Ethernet padding is no
 * payload), so the copy has a length the verifier knows. */
#define INNET_GEN_FRAME_LEN 128

/* Map gen_config (array, 1 entry). */
struct innet_gen_config {
	__u32 len;	/* the template's own length (<= INNET_GEN_FRAME_LEN) */
	__u32 stamp_at; /* offset of a big-endian u32 running number, 0: none */
	__u8 frame[INNET_GEN_FRAME_LEN];
};
#define INNET_GEN_CONFIG_SIZE 136
_Static_assert(sizeof(struct innet_gen_config) == INNET_GEN_CONFIG_SIZE, "gen config size");

MAP(gen_config, BPF_MAP_TYPE_ARRAY, 1, struct innet_gen_config);
/* Frames written, and frames the tail call did not take (no target). */
MAP(gen_counters, BPF_MAP_TYPE_PERCPU_ARRAY, 2, __u64);

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gen_target SEC(".maps");

SEC("xdp")
int xdp_gen(struct xdp_md *ctx)
{
	__u32 zero = 0, one = 1;
	struct innet_gen_config *g = bpf_map_lookup_elem(&gen_config, &zero);
	__u64 *written = bpf_map_lookup_elem(&gen_counters, &zero);
	if (!g || !written)
		return XDP_ABORTED;
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	if (data + INNET_GEN_FRAME_LEN > end)
		return XDP_ABORTED;
	__builtin_memcpy(data, g->frame, INNET_GEN_FRAME_LEN);
	__u64 n = ++*written;
	__u32 at = g->stamp_at;
	if (at && at <= INNET_GEN_FRAME_LEN - 4) {
		__u32 be = bpf_htonl((__u32)n);
		__u8 *p = data;
		p += at & (INNET_GEN_FRAME_LEN - 1);
		if ((void *)(p + 4) <= end)
			__builtin_memcpy(p, &be, 4);
	}
	bpf_tail_call(ctx, &gen_target, 0);
	__u64 *missed = bpf_map_lookup_elem(&gen_counters, &one);
	if (missed)
		*missed += 1;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
