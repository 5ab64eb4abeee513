// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The far end of the fabric-only benchmarks (`innet bench xdp-txn
 * --fabric-only`, `xdp-chain --fabric-only`; crates/xdp/src/sink.rs): on the
 * end hosts' devices (the store's, the client's) in place of the host, it
 * counts every frame that arrives and drops it, so what the in-kernel
 * generator injected ends where a socket would have taken it, with no
 * socket in the way. Counted per CPU (the devices' NAPI threads may run on
 * any); the loader sums.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "innet_xdp.h"

/* Frames that arrived (dropped after counting). */
MAP(sink_counters, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u64);

SEC("xdp")
int xdp_sink(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&sink_counters, &zero);
	if (n)
		*n += 1;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
