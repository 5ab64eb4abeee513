/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The maps of the phase-2B vote counter in front of Paxos learners and
 * proposers (bpf/paxos_learner.bpf.c), shared by the BPF program and the
 * user side. The Rust reference is crates/paxos/src/vote_counter.rs
 * (VoteCounter); crates/xdp/build.rs exports every `#define INNET_*` here
 * and crates/xdp/src/paxos_learner.rs asserts them equal to the
 * reference's constants at compile time.
 */
#ifndef INNET_PAXOS_LEARNER_H
#define INNET_PAXOS_LEARNER_H

#include "innet_paxos.h"

/* Constants of innet_paxos::vote_counter. */
#define INNET_PAXOS_COUNTER_MAX_ACCEPTORS 8
#define INNET_PAXOS_COUNTER_ACPTID 0xffff
#define INNET_PAXOS_COUNTER_SLOTS_DEFAULT 1024
/* Destination ports (learners, proposers) one program counts for, each
 * with its own ring. */
#define INNET_PAXOS_COUNTER_MAX_PORTS 16

/* Counters, in the order of VoteCounter::counters(). */
#define INNET_PAXOS_COUNTER_CTR_DECISIONS 0
#define INNET_PAXOS_COUNTER_CTR_COUNTED 1
#define INNET_PAXOS_COUNTER_CTR_DUPLICATES 2
#define INNET_PAXOS_COUNTER_CTR_LATE 3
#define INNET_PAXOS_COUNTER_CTR_EVICTED 4
#define INNET_PAXOS_COUNTER_CTR_PASSED_STALE 5
#define INNET_PAXOS_COUNTER_CTR_BAD_ACCEPTOR 6
#define INNET_PAXOS_COUNTER_CTR_PASSED 7
#define INNET_PAXOS_COUNTER_CTR_DECODE_ERRORS 8
#define INNET_PAXOS_COUNTER_CTR_REFERENCE_COUNT 9
/* BPF-only: traffic that is not UDP to a counted port, passed up. */
#define INNET_PAXOS_COUNTER_CTR_PASSED_OTHER 12
/* BPF-only: decisions handed up through counter_ring (config.ring), and
 * decisions passed up as a DECIDED packet instead because the ring was
 * full (the socket path takes over: nothing is lost, and it is counted). */
#define INNET_PAXOS_COUNTER_CTR_RING 13
#define INNET_PAXOS_COUNTER_CTR_RING_FULL 14
/* BPF-only: decisions counted and dropped (config.ring == SINK: the
 * fabric-only benchmark, which measures the data plane without hosts). */
#define INNET_PAXOS_COUNTER_CTR_SUNK 15
/* BPF-only: --auth-key (counter_auth on): a frame to a counted port
 * without a MAC trailer that checks under either key, dropped before it is
 * counted or passed up. */
#define INNET_PAXOS_COUNTER_CTR_AUTH_REFUSED 16
#define INNET_PAXOS_COUNTER_CTR_COUNT 17
/* config.ring: decisions up as packets, through the ring, or sunk. */
#define INNET_PAXOS_COUNTER_RING_OFF 0
#define INNET_PAXOS_COUNTER_RING_ON 1
#define INNET_PAXOS_COUNTER_RING_SINK 2
_Static_assert(INNET_PAXOS_COUNTER_CTR_REFERENCE_COUNT <= INNET_PAXOS_COUNTER_CTR_PASSED_OTHER, "counter layout");

/* Map counter_config (array, 1 entry): written by the loader before attach. */
struct innet_paxos_counter_config {
	__u32 acceptors; /* acceptor ids 0..acceptors vote */
	__u32 quorum;	 /* votes in one round that decide */
	__u32 slots;	 /* ring per port, a power of two */
	__u32 ports;	 /* valid entries of port[] */
	__u16 port[INNET_PAXOS_COUNTER_MAX_PORTS]; /* host order: counted UDP destination ports */
	/* Classes that may send each message type to port[k]'s role
	 * (trust::allowed for its kind, written by the loader). */
	__u8 allowed[INNET_PAXOS_COUNTER_MAX_PORTS][INNET_PAXOS_ALLOWED_LEN];
	/* INNET_PAXOS_COUNTER_RING_ON: a decision goes up as a record of
	 * counter_ring (struct innet_paxos_decision) and the vote is dropped;
	 * OFF: as the rewritten packet (XDP_PASS / TC_ACT_OK); SINK: counted
	 * (sunk) and dropped, no host involved. */
	__u32 ring;
	/* How a record wakes the reader: 0, the kernel's adaptive rule (wake
	 * only a reader that has caught up: one wake-up per burst); n > 0,
	 * wake once n records wait, else not (BPF_RB_NO_WAKEUP: the reader
	 * must poll with a timeout). */
	__u32 wakeup;
};
#define INNET_PAXOS_COUNTER_CONFIG_SIZE 248
_Static_assert(sizeof(struct innet_paxos_counter_config) == INNET_PAXOS_COUNTER_CONFIG_SIZE, "config size");

/* One acceptor's latest vote in a slot (CountedVote). */
struct innet_paxos_counted_vote {
	__u16 vrnd;
	__u16 pad;
	__u32 value_len;
	__u8 value[INNET_PAXOS_VALUE_LEN];
};
#define INNET_PAXOS_COUNTED_VOTE_SIZE 40
_Static_assert(sizeof(struct innet_paxos_counted_vote) == INNET_PAXOS_COUNTED_VOTE_SIZE, "vote size");

/* Map counter_slots (array, ports * slots entries; port k's ring is
 * entries k*slots ..): CounterSlot, plus a lock (votes for one instance
 * arrive on every acceptor's device, on any CPU). */
struct innet_paxos_counter_slot {
	struct bpf_spin_lock lock;
	__u32 valid;
	__u32 inst;
	__u32 decided;
	__u16 decided_rnd;
	__u16 pad;
	__u32 voted; /* bit a: votes[a] holds acceptor a's latest vote */
	struct innet_paxos_counted_vote votes[INNET_PAXOS_COUNTER_MAX_ACCEPTORS];
};
#define INNET_PAXOS_COUNTER_SLOT_SIZE 344
#define INNET_PAXOS_COUNTER_OFF_VOTES 24
_Static_assert(sizeof(struct innet_paxos_counter_slot) == INNET_PAXOS_COUNTER_SLOT_SIZE, "slot size");
_Static_assert(__builtin_offsetof(struct innet_paxos_counter_slot, votes) == INNET_PAXOS_COUNTER_OFF_VOTES,
	       "votes offset");

/* A record of counter_ring (BPF_MAP_TYPE_RINGBUF, sized by the loader):
 * one decision, the DECIDED exactly as it would have gone up as a packet,
 * and the counted port it was for. */
struct innet_paxos_decision {
	__u32 port_index; /* index into config.port */
	__u32 pad;
	struct innet_paxos_hdr hdr;
};
#define INNET_PAXOS_DECISION_SIZE 56
#define INNET_PAXOS_DECISION_OFF_HDR 8
_Static_assert(sizeof(struct innet_paxos_decision) == INNET_PAXOS_DECISION_SIZE, "decision size");
_Static_assert(__builtin_offsetof(struct innet_paxos_decision, hdr) == INNET_PAXOS_DECISION_OFF_HDR, "hdr offset");
/* counter_ring's default size (bytes, a power of two of pages): 4,096
 * records of 64 bytes with the ring's 8-byte record header. */
#define INNET_PAXOS_COUNTER_RING_BYTES_DEFAULT 262144

#endif /* INNET_PAXOS_LEARNER_H */
