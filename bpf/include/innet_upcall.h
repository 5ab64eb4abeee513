/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The decision upcall benchmark (bpf/upcall.bpf.c, crates/xdp/src/upcall.rs,
 * `innet bench xdp-upcall`): how a decided Paxos instance gets from an XDP
 * program up to a user-space learner. Shared by the BPF programs and the
 * user side (build.rs turns every `#define INNET_UPCALL_*` into a Rust
 * constant).
 *
 * A decision is one CAANS DECIDED message (innet_paxos.h: 16-byte header
 * with the instance number, 32-byte value) in a UDP datagram to the
 * learner port. The benchmark's generator writes the instance and a
 * CLOCK_MONOTONIC stamp (bpf_ktime_get_ns) into the first 8 value bytes.
 */
#ifndef INNET_UPCALL_H
#define INNET_UPCALL_H

/* Paths up (struct upcall_config.path). */
#define INNET_UPCALL_PATH_SOCKET 0 /* XDP_PASS: one datagram per decision into the learner's socket (today's path) */
#define INNET_UPCALL_PATH_BATCH 1  /* hold decisions; every `batch`-th carries them all up as one datagram */
#define INNET_UPCALL_PATH_RING 2   /* a BPF ring buffer record per decision; XDP_PASS when the ring is full */
#define INNET_UPCALL_PATH_XSK 3	   /* XSKMAP redirect to an AF_XDP socket; XDP_PASS when none is bound */
#define INNET_UPCALL_PATH_DROP 4   /* XDP_DROP: nothing goes up (the generator's ceiling) */
#define INNET_UPCALL_PATH_COUNT 5

/* Most decisions one batch datagram carries (the held ones + the one that
 * flushes them): 64 * 48 = 3,072 bytes of payload, within a page's tailroom. */
#define INNET_UPCALL_BATCH_MAX 64
/* A ring record: the DECIDED message as on the wire; the kernel adds an
 * 8-byte header, so one record takes 56 bytes of the ring. */
#define INNET_UPCALL_RECORD_LEN 48
#define INNET_UPCALL_RECORD_STRIDE 56
/* Ring size when none is given (bytes; a power of two, a page multiple). */
#define INNET_UPCALL_RING_BYTES_DEFAULT 1048576
/* Entries of the XSKMAP: receive queues of the device (veths here have one). */
#define INNET_UPCALL_XSK_QUEUES 4

/* Counters (per-CPU array upcall_counters). */
#define INNET_UPCALL_CTR_DECISIONS 0	    /* decisions seen by xdp_upcall */
#define INNET_UPCALL_CTR_OTHER 1	    /* anything else, passed to the stack */
#define INNET_UPCALL_CTR_PASSED 2	    /* decisions passed one by one (path socket) */
#define INNET_UPCALL_CTR_RING_RECORDS 3	    /* decisions written to the ring */
#define INNET_UPCALL_CTR_RING_FULL 4	    /* ring full: passed to the socket instead */
#define INNET_UPCALL_CTR_RING_WAKEUPS_FORCED 5 /* records submitted with BPF_RB_FORCE_WAKEUP */
#define INNET_UPCALL_CTR_BATCH_HELD 6	    /* decisions held for a batch */
#define INNET_UPCALL_CTR_BATCH_PACKETS 7    /* batch datagrams passed up */
#define INNET_UPCALL_CTR_BATCH_GROW_FAILED 8 /* no tailroom to carry the batch: this one held too */
#define INNET_UPCALL_CTR_XSK_REDIRECTS 9    /* redirected to the AF_XDP socket */
#define INNET_UPCALL_CTR_XSK_FALLBACK 10    /* no AF_XDP socket on the queue: passed */
#define INNET_UPCALL_CTR_DROPPED 11	    /* path drop */
#define INNET_UPCALL_CTR_BATCH_OVERFLOW 12  /* no tailroom and BATCH_MAX held: passed alone, out of order */
#define INNET_UPCALL_CTR_COUNT 13

/* What xdp_upcall does (array upcall_config, one entry, written by the
 * benchmark before each run). */
struct upcall_config {
	__u32 path;
	/* Path batch: decisions per datagram, 1..INNET_UPCALL_BATCH_MAX. */
	__u32 batch;
	/* Path ring: 0 = the kernel's adaptive wake-up (flags 0: wake when the
	 * consumer had caught up); T > 0 = BPF_RB_NO_WAKEUP except the record
	 * that makes T unread records, which gets BPF_RB_FORCE_WAKEUP (the
	 * consumer's poll timeout collects fewer than T). */
	__u32 wake_threshold;
	__u32 pad;
};
_Static_assert(sizeof(struct upcall_config) == 16, "upcall_config is 16 bytes");

/* Decisions held for the next batch datagram (per-CPU array upcall_batch,
 * one entry): all of one run's decisions arrive on one CPU (the veth's
 * NAPI runs where the sender runs; the benchmark pins the sender). */
struct upcall_batch {
	__u32 count;
	__u32 pad;
	__u8 decisions[INNET_UPCALL_BATCH_MAX * 48];
};

/* The generator's next instance number (array upcall_gen, one entry). */
struct upcall_gen {
	__u64 next_instance;
};

#endif /* INNET_UPCALL_H */
