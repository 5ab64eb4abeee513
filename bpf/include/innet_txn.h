/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The Gotthard / NOCC transaction format (Gotthard 2016, section 3.5 and
 * Figure 5), shared by the BPF programs and the user side.
 *
 * The Rust definition is crates/wire/src/txn.rs; its golden vectors are
 * crates/wire/golden/txn.json. This header is checked against both:
 *   - here, by _Static_assert on every size and offset (C compile time);
 *   - crates/xdp/build.rs reads every `#define INNET_TXN_*` below into Rust
 *     constants, and crates/xdp/src/layout.rs asserts at Rust compile time
 *     that they equal innet_wire::txn's;
 *   - crates/xdp/tests/txn_differential.rs runs the golden vectors through
 *     the compiled program and compares with the Rust reference.
 *
 * Network byte order on the wire. UDP payload:
 *   flags(1) cl_id(4) req_id(4) frag_seq(1) frag_cnt(1) status(1) op_cnt(1)
 *   then op_cnt x { op_type(1) key(4) value(INNET_TXN_VALUE_LEN) }
 */
#ifndef INNET_TXN_H
#define INNET_TXN_H

#define INNET_TXN_HEADER_LEN 13
#define INNET_TXN_VALUE_LEN 16
#define INNET_TXN_OP_LEN 21
#define INNET_TXN_MAX_OPS_PER_PACKET 7
#define INNET_TXN_MAX_PACKET_LEN 160
#define INNET_TXN_DEFAULT_PORT 9999

/* Header offsets. */
#define INNET_TXN_OFF_FLAGS 0
#define INNET_TXN_OFF_CL_ID 1
#define INNET_TXN_OFF_REQ_ID 5
#define INNET_TXN_OFF_FRAG_SEQ 9
#define INNET_TXN_OFF_FRAG_CNT 10
#define INNET_TXN_OFF_STATUS 11
#define INNET_TXN_OFF_OP_CNT 12
/* Offsets inside one op. */
#define INNET_TXN_OFF_OP_TYPE 0
#define INNET_TXN_OFF_OP_KEY 1
#define INNET_TXN_OFF_OP_VALUE 5

/* Flag bits. */
#define INNET_TXN_FLAG_RESPONSE 0x80
#define INNET_TXN_FLAG_FROM_SWITCH 0x40
#define INNET_TXN_FLAG_RESET 0x20
#define INNET_TXN_FLAG_STORE_COMMIT 0x10

/* Op types (the reference P4's GOTTHARD_OP_*). */
#define INNET_TXN_OP_NOP 0
#define INNET_TXN_OP_READ 1
#define INNET_TXN_OP_WRITE 2
#define INNET_TXN_OP_VALUE 3
#define INNET_TXN_OP_UPDATED 4
#define INNET_TXN_OP_CPU_PCT 5
#define INNET_TXN_OP_MAX 5

/* Status codes. */
#define INNET_TXN_STATUS_OK 0
#define INNET_TXN_STATUS_ABORT 1
#define INNET_TXN_STATUS_OPTIMISTIC_ABORT 2
#define INNET_TXN_STATUS_BAD_REQUEST 3
#define INNET_TXN_STATUS_MAX 3

/* Decode errors, in the order of innet_wire::txn::DecodeError::ALL. */
#define INNET_TXN_ERR_TRUNCATED 0
#define INNET_TXN_ERR_TOO_MANY_OPS 1
#define INNET_TXN_ERR_OPS_BEYOND_PACKET 2
#define INNET_TXN_ERR_UNKNOWN_OP_TYPE 3
#define INNET_TXN_ERR_UNKNOWN_STATUS 4
#define INNET_TXN_ERR_BAD_FRAGMENT 5
#define INNET_TXN_ERR_COUNT 6

struct innet_txn_hdr {
	__u8 flags;
	__be32 cl_id;
	__be32 req_id;
	__u8 frag_seq;
	__u8 frag_cnt;
	__u8 status;
	__u8 op_cnt;
} __attribute__((packed));

struct innet_txn_op {
	__u8 op_type;
	__be32 key;
	__u8 value[INNET_TXN_VALUE_LEN];
} __attribute__((packed));

#define INNET_TXN_OFFSET_CHECK(t, f, off) _Static_assert(__builtin_offsetof(struct t, f) == (off), #t "." #f " offset")
_Static_assert(sizeof(struct innet_txn_hdr) == INNET_TXN_HEADER_LEN, "header size");
_Static_assert(sizeof(struct innet_txn_op) == INNET_TXN_OP_LEN, "op size");
_Static_assert(INNET_TXN_OP_LEN == 1 + 4 + INNET_TXN_VALUE_LEN, "op = type + key + value");
_Static_assert(INNET_TXN_MAX_PACKET_LEN == INNET_TXN_HEADER_LEN + INNET_TXN_MAX_OPS_PER_PACKET * INNET_TXN_OP_LEN,
	       "max packet");
INNET_TXN_OFFSET_CHECK(innet_txn_hdr, flags, INNET_TXN_OFF_FLAGS);
INNET_TXN_OFFSET_CHECK(innet_txn_hdr, cl_id, INNET_TXN_OFF_CL_ID);
INNET_TXN_OFFSET_CHECK(innet_txn_hdr, req_id, INNET_TXN_OFF_REQ_ID);
INNET_TXN_OFFSET_CHECK(innet_txn_hdr, frag_seq, INNET_TXN_OFF_FRAG_SEQ);
INNET_TXN_OFFSET_CHECK(innet_txn_hdr, frag_cnt, INNET_TXN_OFF_FRAG_CNT);
INNET_TXN_OFFSET_CHECK(innet_txn_hdr, status, INNET_TXN_OFF_STATUS);
INNET_TXN_OFFSET_CHECK(innet_txn_hdr, op_cnt, INNET_TXN_OFF_OP_CNT);
INNET_TXN_OFFSET_CHECK(innet_txn_op, op_type, INNET_TXN_OFF_OP_TYPE);
INNET_TXN_OFFSET_CHECK(innet_txn_op, key, INNET_TXN_OFF_OP_KEY);
INNET_TXN_OFFSET_CHECK(innet_txn_op, value, INNET_TXN_OFF_OP_VALUE);

#endif /* INNET_TXN_H */
