/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The CAANS Paxos header (P4xos layout, 48 bytes) and the maps of the Paxos
 * data-plane roles (bpf/paxos.bpf.c: coordinator and acceptor), shared by
 * the BPF programs and the user side.
 *
 * The Rust definitions are crates/wire/src/paxos.rs (format, golden vectors
 * in crates/wire/golden/paxos.json) and crates/paxos (coordinator.rs,
 * acceptor.rs: the reference programs). Checked three ways: _Static_assert
 * here; crates/xdp/build.rs turns every `#define INNET_PAXOS_*` into a Rust
 * constant that crates/xdp/src/paxos.rs asserts equal to innet-wire's and
 * innet-paxos's at compile time; crates/xdp/tests/paxos_differential.rs runs
 * the golden vectors and random packets through both.
 *
 * Network byte order on the wire. UDP payload:
 *   msgtype(2) inst(4) rnd(2) vrnd(2) acptid(2) value_len(4) value(32)
 */
#ifndef INNET_PAXOS_H
#define INNET_PAXOS_H

#define INNET_PAXOS_VALUE_LEN 32
#define INNET_PAXOS_HEADER_LEN 16
#define INNET_PAXOS_PACKET_LEN 48
#define INNET_PAXOS_DATAPLANE_PORT 34953 /* 0x8889 */
#define INNET_PAXOS_LEARNER_PORT 34960	 /* 0x8890 */

#define INNET_PAXOS_OFF_MSGTYPE 0
#define INNET_PAXOS_OFF_INST 2
#define INNET_PAXOS_OFF_RND 6
#define INNET_PAXOS_OFF_VRND 8
#define INNET_PAXOS_OFF_ACPTID 10
#define INNET_PAXOS_OFF_VALUE_LEN 12
#define INNET_PAXOS_OFF_VALUE 16

/* Message types (innet_wire::paxos::MsgType). */
#define INNET_PAXOS_MSG_1A 0
#define INNET_PAXOS_MSG_1B 1
#define INNET_PAXOS_MSG_2A 2
#define INNET_PAXOS_MSG_2B 3
#define INNET_PAXOS_MSG_REQUEST 4
#define INNET_PAXOS_MSG_TRIM 5
#define INNET_PAXOS_MSG_HEARTBEAT 6
#define INNET_PAXOS_MSG_TAKEOVER 7
#define INNET_PAXOS_MSG_CATCHUP 8
#define INNET_PAXOS_MSG_DECIDED 9
#define INNET_PAXOS_MSG_WINDOW 10
#define INNET_PAXOS_MSG_COUNT 11

/* Constants of innet_paxos. */
#define INNET_PAXOS_ROUND_INIT 1
#define INNET_PAXOS_MAX_LEARNERS 32
#define INNET_PAXOS_ACCEPTOR_SLOTS_DEFAULT 1024
#define INNET_PAXOS_GROUP_ACCEPTORS 1
#define INNET_PAXOS_GROUP_LEARNERS 2

/* Verdict codes (innet_core::Verdict::code()). */
#define INNET_PAXOS_VERDICT_DROP 0
#define INNET_PAXOS_VERDICT_REFLECT 3
#define INNET_PAXOS_VERDICT_MULTICAST 5
#define INNET_PAXOS_VERDICT_ORIGIN 6

/* Roles: which program the config is for. */
#define INNET_PAXOS_ROLE_COORDINATOR 0
#define INNET_PAXOS_ROLE_ACCEPTOR 1

/* Counters of the coordinator, in the order of Coordinator::counters(). */
#define INNET_PAXOS_COORD_CTR_REQUESTS 0
#define INNET_PAXOS_COORD_CTR_WINDOW_FULL 1
#define INNET_PAXOS_COORD_CTR_TRIMS 2
#define INNET_PAXOS_COORD_CTR_HEARTBEATS 3
#define INNET_PAXOS_COORD_CTR_IGNORED 4
#define INNET_PAXOS_COORD_CTR_DECODE_ERRORS 5
#define INNET_PAXOS_COORD_CTR_COUNT 6
/* Counters of the acceptor, in the order of Acceptor::counters(). */
#define INNET_PAXOS_ACC_CTR_PROMISES 0
#define INNET_PAXOS_ACC_CTR_VOTES 1
#define INNET_PAXOS_ACC_CTR_STALE_ROUND 2
#define INNET_PAXOS_ACC_CTR_TRIMMED 3
#define INNET_PAXOS_ACC_CTR_RING_FULL 4
#define INNET_PAXOS_ACC_CTR_TRIMS 5
#define INNET_PAXOS_ACC_CTR_CONFLICTING 6
#define INNET_PAXOS_ACC_CTR_IGNORED 7
#define INNET_PAXOS_ACC_CTR_DECODE_ERRORS 8
#define INNET_PAXOS_ACC_CTR_COUNT 9
/* BPF-only counters, the same index for both roles. */
#define INNET_PAXOS_CTR_XDP_PASSED_OTHER 12 /* not Paxos traffic: XDP_PASS */
#define INNET_PAXOS_CTR_MULTICAST_COPIES 13 /* clones sent by tc_paxos */
#define INNET_PAXOS_CTR_MULTICAST_ERRORS 14 /* bpf_clone_redirect failures */
#define INNET_PAXOS_CTR_EGRESS_COPIES 15    /* devmap copies rewritten by xdp_paxos_egress */
#define INNET_PAXOS_CTR_AUTH_REFUSED 16	    /* --auth-key: no trailer, or one that does not check */
#define INNET_PAXOS_CTR_COUNT 17
_Static_assert(INNET_PAXOS_ACC_CTR_COUNT <= INNET_PAXOS_CTR_XDP_PASSED_OTHER, "counter layout");
_Static_assert(INNET_PAXOS_COORD_CTR_COUNT <= INNET_PAXOS_CTR_XDP_PASSED_OTHER, "counter layout");

/* Who may send what (innet_paxos::trust): sender classes, one bit each
 * (trust::class), the role kinds whose rules a program applies
 * (trust::Kind::code), and the rejection reasons in trust::Reject::index
 * order: untrusted_<type> at the type's number, then foreign_round,
 * foreign_proposer and foreign_learner. */
#define INNET_PAXOS_CLASS_COORDINATOR 1
#define INNET_PAXOS_CLASS_BACKUP 2
#define INNET_PAXOS_CLASS_ACCEPTOR 4
#define INNET_PAXOS_CLASS_LEARNER 8
#define INNET_PAXOS_CLASS_PROPOSER 16
#define INNET_PAXOS_CLASS_OUTSIDE 128
#define INNET_PAXOS_CLASS_ANY 255
#define INNET_PAXOS_KIND_COORDINATOR 0
#define INNET_PAXOS_KIND_ACCEPTOR 1
#define INNET_PAXOS_KIND_BACKUP 2
#define INNET_PAXOS_KIND_LEARNER 3
#define INNET_PAXOS_KIND_PROPOSER 4
#define INNET_PAXOS_REJECT_FOREIGN_ROUND 11
#define INNET_PAXOS_REJECT_FOREIGN_PROPOSER 12
#define INNET_PAXOS_REJECT_FOREIGN_LEARNER 13
#define INNET_PAXOS_REJECT_COUNT 14
/* Learner k's round issuer is ISSUER_LEARNER_BASE + k (innet_paxos). */
#define INNET_PAXOS_ISSUER_LEARNER_BASE 16
/* innet_paxos::envelope: a value is an envelope from ENVELOPE_HEADER_LEN
 * bytes on; its first 4 (big-endian) are the proposer id, whose bits above
 * PROPOSER_INCARNATION_BITS are the proposer's block. */
#define INNET_PAXOS_ENVELOPE_HEADER_LEN 8
#define INNET_PAXOS_PROPOSER_INCARNATION_BITS 20
/* A row of allowed classes, one byte per message type (padded). */
#define INNET_PAXOS_ALLOWED_LEN 12
_Static_assert(INNET_PAXOS_ALLOWED_LEN >= INNET_PAXOS_MSG_COUNT, "allowed row");
_Static_assert(INNET_PAXOS_REJECT_FOREIGN_ROUND == INNET_PAXOS_MSG_COUNT, "reject order");
/* Most entries of a sender map. */
#define INNET_PAXOS_MAX_SENDERS 256

/* Sender maps (hash, paxos_senders / counter_senders): who a frame is
 * from, by ingress interface, IPv4 source and UDP source port. Port 0
 * stands for any port: the lookup tries the frame's port, then 0 (the BPF
 * roles rewrite addresses but keep the source port of the packet they
 * rewrote, so their copies are known by address only). A frame found in
 * neither is from an outside sender (INNET_PAXOS_CLASS_OUTSIDE). */
struct innet_paxos_sender_key {
	__u32 ifindex;
	__be32 ip;
	__u16 port; /* host order; 0: any */
	__u16 pad;
};
#define INNET_PAXOS_SENDER_KEY_SIZE 12
_Static_assert(sizeof(struct innet_paxos_sender_key) == INNET_PAXOS_SENDER_KEY_SIZE, "sender key size");

struct innet_paxos_sender {
	__u8 class;	/* INNET_PAXOS_CLASS_* */
	__u8 issuer;	/* the round issuer it uses (0: none) */
	__u8 flags;	/* INNET_PAXOS_SENDER_* */
	__u8 pad;
	__u16 proposer; /* the block of the proposer ids it may submit (trust::block_of) */
	__u16 pad2;
};
/* In an any-port entry: the map holds no per-port entry for this
 * interface and address, so the lookup can stop here (the data-plane
 * roles' copies, which are known by address only, cost one lookup). */
#define INNET_PAXOS_SENDER_ADDRESS_ONLY 1
#define INNET_PAXOS_SENDER_SIZE 8
_Static_assert(sizeof(struct innet_paxos_sender) == INNET_PAXOS_SENDER_SIZE, "sender size");

/* Multicast group members one role instance sends to (paxos_members). */
#define INNET_PAXOS_MAX_MEMBERS 16
/* How a role's multicast verdict leaves (config.mcast):
 *  - TC: XDP metadata + XDP_PASS, tc_paxos clones one skb per member
 *    (any number of members per device; the generic-mode path of old);
 *  - DEVMAP: bpf_redirect_map(paxos_ports, BPF_F_BROADCAST): the kernel
 *    copies the frame to every device of paxos_ports, whose egress program
 *    (xdp_paxos_egress) rewrites each copy to the member on that device
 *    (paxos_member_at): one member per device, no skb, no tc. */
#define INNET_PAXOS_MCAST_TC 0
#define INNET_PAXOS_MCAST_DEVMAP 1
/* XDP metadata in front of a frame the XDP program multicasts: tells
 * tc_paxos (same device, ingress) to clone it to the group. */
#define INNET_PAXOS_META_MAGIC 0x9a05

struct innet_paxos_hdr {
	__be16 msgtype;
	__be32 inst;
	__be16 rnd;
	__be16 vrnd;
	__be16 acptid;
	__be32 value_len;
	__u8 value[INNET_PAXOS_VALUE_LEN];
} __attribute__((packed));

/* Map paxos_config (array, 1 entry): written by the loader before attach. */
struct innet_paxos_config {
	__u32 role;	      /* INNET_PAXOS_ROLE_* */
	__u32 udp_port;	      /* host order: the data-plane port (0x8889) */
	__u32 slots;	      /* acceptors' ring (power of two <= paxos_slots max_entries) */
	__u32 first_instance; /* coordinator: the first instance handed out */
	__u32 learners;	      /* learners that report checkpoints */
	__u32 trim_quorum;    /* learners that make the trim floor */
	__u16 round;	      /* coordinator: the round of every 2A */
	__u16 acceptor_id;    /* acceptor: acptid of its 1Bs and 2Bs */
	__u16 group;	      /* the group of this role's multicast verdict */
	__u16 members;	      /* valid entries of paxos_members */
	/* Classes that may send each message type to this role
	 * (trust::allowed for its kind, written by the loader). */
	__u8 allowed[INNET_PAXOS_ALLOWED_LEN];
	__u32 mcast; /* INNET_PAXOS_MCAST_* */
};
#define INNET_PAXOS_CONFIG_SIZE 48
_Static_assert(sizeof(struct innet_paxos_config) == INNET_PAXOS_CONFIG_SIZE, "config size");

/* Map paxos_state (array, 1 entry): the scalar registers. */
struct innet_paxos_state {
	__u32 next;  /* coordinator: the instance the next request gets */
	__u32 floor; /* trim floor (TrimFloor::floor) */
	__u32 checkpoints[INNET_PAXOS_MAX_LEARNERS];
};
#define INNET_PAXOS_STATE_SIZE 136
_Static_assert(sizeof(struct innet_paxos_state) == INNET_PAXOS_STATE_SIZE, "state size");

/* Map paxos_slots (array, `slots` entries): the acceptor's ring. */
struct innet_paxos_slot {
	__u32 valid;
	__u32 inst;
	__u16 rnd;
	__u16 vrnd;
	__u32 value_len;
	__u8 value[INNET_PAXOS_VALUE_LEN];
};
#define INNET_PAXOS_SLOT_SIZE 48
_Static_assert(sizeof(struct innet_paxos_slot) == INNET_PAXOS_SLOT_SIZE, "slot size");

/* Map paxos_members (array): where a multicast copy goes. */
struct innet_paxos_member {
	__u32 ifindex; /* egress device */
	__be32 src_ip;
	__be32 dst_ip;
	__u16 dst_port; /* host order */
	__u8 src_mac[6];
	__u8 dst_mac[6];
	__u16 pad;
};
#define INNET_PAXOS_MEMBER_SIZE 28
_Static_assert(sizeof(struct innet_paxos_member) == INNET_PAXOS_MEMBER_SIZE, "member size");

#define INNET_PAXOS_OFFSET_CHECK(f, off) \
	_Static_assert(__builtin_offsetof(struct innet_paxos_hdr, f) == (off), "innet_paxos_hdr." #f " offset")
_Static_assert(sizeof(struct innet_paxos_hdr) == INNET_PAXOS_PACKET_LEN, "packet size");
_Static_assert(INNET_PAXOS_PACKET_LEN == INNET_PAXOS_HEADER_LEN + INNET_PAXOS_VALUE_LEN, "header + value");
INNET_PAXOS_OFFSET_CHECK(msgtype, INNET_PAXOS_OFF_MSGTYPE);
INNET_PAXOS_OFFSET_CHECK(inst, INNET_PAXOS_OFF_INST);
INNET_PAXOS_OFFSET_CHECK(rnd, INNET_PAXOS_OFF_RND);
INNET_PAXOS_OFFSET_CHECK(vrnd, INNET_PAXOS_OFF_VRND);
INNET_PAXOS_OFFSET_CHECK(acptid, INNET_PAXOS_OFF_ACPTID);
INNET_PAXOS_OFFSET_CHECK(value_len, INNET_PAXOS_OFF_VALUE_LEN);
INNET_PAXOS_OFFSET_CHECK(value, INNET_PAXOS_OFF_VALUE);

#endif /* INNET_PAXOS_H */
