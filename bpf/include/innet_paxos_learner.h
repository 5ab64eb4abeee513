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
#define INNET_PAXOS_COUNTER_CTR_COUNT 16
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
};
#define INNET_PAXOS_COUNTER_CONFIG_SIZE 240
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

#endif /* INNET_PAXOS_LEARNER_H */
