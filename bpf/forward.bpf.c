// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The baselines of CAANS Table 1 ("forwarding without Paxos logic"): what
 * the Paxos roles do around their payload logic, and nothing else.
 *
 *  - xdp_forward: parses Ethernet / IPv4 / UDP to the Paxos data-plane
 *    port exactly as xdp_paxos_coordinator and xdp_paxos_acceptor do
 *    (paxos_parse), clears the UDP checksum, swaps the addresses and sends
 *    the frame back out (XDP_TX), as a role's Reflect verdict does. Other
 *    traffic is XDP_PASS.
 *  - xdp_pass: returns XDP_PASS without reading the frame: the floor of a
 *    BPF_PROG_TEST_RUN measurement (the run's own overhead and clock read).
 *
 * Neither keeps state; neither has maps.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "innet_paxos.h"
#include "innet_xdp.h"

SEC("xdp")
int xdp_forward(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct l234 l;
	if (!parse_l234_at(data, end, &l) || l.udp->dest != bpf_htons(INNET_PAXOS_DATAPLANE_PORT))
		return XDP_PASS;
	l.udp->check = 0;
	swap_addresses(&l);
	return XDP_TX;
}

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
