/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * --auth-key in BPF: the MAC trailer of innet_core::auth (crates/core/src/
 * auth.rs, the reference; read its essay first). A sealed message is
 *
 *   message | key id (1 byte) | tag (8 bytes, little-endian)
 *   tag = SipHash-2-4(key[key id], message || key id)
 *
 * SipHash-2-4 as in Aumasson and Bernstein, "SipHash: a fast short-input
 * PRF" (2012), section 2: 64-bit add, rotate and xor, two rounds per 8-byte
 * word, four to finish. Two forms: for messages of a whole number of
 * 8-byte words read from the packet (the Paxos header: 6 words, so the last
 * block holds only the key id and the length; the coordinator, acceptor
 * and vote counter), and for messages of any length up to a bound, read
 * from a per-CPU scratch copy (innet_siphash_id: the transaction header
 * and its ops in the switch's scratch, the chain nodes' messages).
 * Include after bpf_helpers.h.
 */
#ifndef INNET_AUTH_H
#define INNET_AUTH_H

#include <linux/types.h>

#define INNET_AUTH_TAG_LEN 8
#define INNET_AUTH_TRAILER_LEN 9 /* key id + tag */
#define INNET_AUTH_MAX_KEYS 2	 /* the sealing key and one more, for rotation */

/* One key: k0, k1 are its 16 bytes as two little-endian words. */
struct innet_auth_key {
	__u64 k0;
	__u64 k1;
	__u32 id;
	__u32 valid;
};

/* Map <prog>_auth (array, 1 entry), written by the loader: off unless `on`;
 * keys[0] seals, every valid key is accepted. */
struct innet_auth {
	__u32 on;
	__u32 pad;
	struct innet_auth_key keys[INNET_AUTH_MAX_KEYS];
};
#define INNET_AUTH_SIZE 56
_Static_assert(sizeof(struct innet_auth) == INNET_AUTH_SIZE, "auth config size");

#define INNET_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define INNET_SIPROUND(v0, v1, v2, v3)                                                \
	do {                                                                          \
		v0 += v1;                                                             \
		v1 = INNET_ROTL(v1, 13);                                              \
		v1 ^= v0;                                                             \
		v0 = INNET_ROTL(v0, 32);                                              \
		v2 += v3;                                                             \
		v3 = INNET_ROTL(v3, 16);                                              \
		v3 ^= v2;                                                             \
		v0 += v3;                                                             \
		v3 = INNET_ROTL(v3, 21);                                              \
		v3 ^= v0;                                                             \
		v2 += v1;                                                             \
		v1 = INNET_ROTL(v1, 17);                                              \
		v1 ^= v2;                                                             \
		v2 = INNET_ROTL(v2, 32);                                              \
	} while (0)

/* SipHash-2-4's state, its compression of one 8-byte word, and its
 * finalization with the last block `b` (the input's last len % 8 bytes and
 * its length mod 256 in the top byte). */
struct innet_sip {
	__u64 v0, v1, v2, v3;
};

static __always_inline void innet_sip_init(struct innet_sip *s, const struct innet_auth_key *k)
{
	s->v0 = k->k0 ^ 0x736f6d6570736575ULL;
	s->v1 = k->k1 ^ 0x646f72616e646f6dULL;
	s->v2 = k->k0 ^ 0x6c7967656e657261ULL;
	s->v3 = k->k1 ^ 0x7465646279746573ULL;
}

static __always_inline void innet_sip_word(struct innet_sip *s, __u64 w)
{
	s->v3 ^= w;
	INNET_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	INNET_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	s->v0 ^= w;
}

static __always_inline __u64 innet_sip_finish(struct innet_sip *s, __u64 b)
{
	innet_sip_word(s, b);
	s->v2 ^= 0xff;
	INNET_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	INNET_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	INNET_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	INNET_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* SipHash-2-4 under `k` of the `words` 8-byte words at `m` followed by the
 * byte `id` (`words` a constant: the loop unrolls). */
static __always_inline __u64 innet_siphash_words_id(const struct innet_auth_key *k, const __u8 *m, __u32 words,
						      __u8 id)
{
	struct innet_sip s;
	innet_sip_init(&s, k);
#pragma unroll
	for (__u32 i = 0; i < words; i++) {
		__u64 w;
		__builtin_memcpy(&w, m + 8 * i, 8);
		innet_sip_word(&s, w);
	}
	return innet_sip_finish(&s, ((__u64)(8 * words + 1) << 56) | id);
}

/* SipHash-2-4 under `k` of the `len` bytes at `m` followed by the byte
 * `id`: the one form for messages of any length up to 8 * `max_words`
 * bytes (`max_words` a constant), hashed from a buffer such as a per-CPU
 * scratch map value (the transaction switch's payload, the chain nodes'),
 * which it does not write. `m` must have 8 * `max_words` + 8 readable
 * bytes: the message's last len % 8 bytes are read as one word and
 * masked. Longer messages hash their first 8 * `max_words` bytes only:
 * callers refuse them first. */
static __always_inline __u64 innet_siphash_id(const struct innet_auth_key *k, const __u8 *m, __u32 len,
					       __u32 max_words, __u8 id)
{
	struct innet_sip s;
	innet_sip_init(&s, k);
	__u32 words = len >> 3;
	if (words > max_words)
		words = max_words;
	for (__u32 i = 0; i < max_words; i++) {
		if (i >= words)
			break;
		__u64 w;
		__builtin_memcpy(&w, m + 8 * i, 8);
		innet_sip_word(&s, w);
	}
	/* The message's last len % 8 bytes, then the key id. */
	__u32 rest = len & 7;
	__u64 b;
	__builtin_memcpy(&b, m + 8 * words, 8);
	b = rest ? b & ((1ULL << (8 * rest)) - 1) : 0;
	b |= (__u64)id << (8 * rest);
	if (rest == 7) {
		/* message || id fills a word: the last block holds only the length. */
		innet_sip_word(&s, b);
		b = 0;
	}
	return innet_sip_finish(&s, b | ((__u64)(len + 1) << 56));
}

/* The key whose id is `id`, or 0. */
static __always_inline const struct innet_auth_key *innet_auth_key_of(const struct innet_auth *a, __u8 id)
{
#pragma unroll
	for (int i = 0; i < INNET_AUTH_MAX_KEYS; i++)
		if (a->keys[i].valid && a->keys[i].id == id)
			return &a->keys[i];
	return 0;
}

static __always_inline __u64 innet_auth_tag_of(const __u8 *t)
{
	__u64 tag;
	__builtin_memcpy(&tag, t + 1, 8);
	return tag;
}

/* Messages of any length up to INNET_AUTH_MSG_MAX bytes (the chain nodes':
 * a NetCRAQ header and what a client put after it, a NetChain header with
 * its stack) are hashed from a per-CPU scratch copy (struct
 * innet_auth_scratch), which has room after the message for its trailer
 * and the last word innet_siphash_id reads. */
#define INNET_AUTH_MSG_MAX 120
#define INNET_AUTH_MSG_WORDS (INNET_AUTH_MSG_MAX / 8)
#define INNET_AUTH_SCRATCH_LEN (INNET_AUTH_MSG_MAX + 16)
struct innet_auth_scratch {
	__u8 buf[INNET_AUTH_SCRATCH_LEN];
};
_Static_assert(INNET_AUTH_MSG_MAX % 8 == 0, "whole words");
_Static_assert(8 * INNET_AUTH_MSG_WORDS + 8 <= INNET_AUTH_SCRATCH_LEN, "innet_siphash_id reads within scratch");

/* AuthKeys::open for the `words`-word message at `m` and its trailer at
 * `t`: 1 if the tag checks under the key its id names. */
static __always_inline int innet_auth_open(const struct innet_auth *a, const __u8 *m, __u32 words, const __u8 *t)
{
	const struct innet_auth_key *k = innet_auth_key_of(a, t[0]);
	return k && innet_siphash_words_id(k, m, words, t[0]) == innet_auth_tag_of(t);
}

/* innet_auth_open for a payload of `len` bytes at `m` that must be the
 * `words`-word message and its trailer exactly, within `end` (the packet's). */
static __always_inline int innet_auth_open_exact(const struct innet_auth *a, const __u8 *m, __u32 words, __u32 len,
						 const void *end)
{
	const __u8 *t = m + 8 * words;
	return len == 8 * words + INNET_AUTH_TRAILER_LEN && (const void *)(t + INNET_AUTH_TRAILER_LEN) <= end &&
	       innet_auth_open(a, m, words, t);
}

/* innet_auth_open for the `len`-byte message at `m` (innet_siphash_id). */
static __always_inline int innet_auth_open_bytes(const struct innet_auth *a, const __u8 *m, __u32 len,
						 __u32 max_words, const __u8 *t)
{
	const struct innet_auth_key *k = innet_auth_key_of(a, t[0]);
	return k && innet_siphash_id(k, m, len, max_words, t[0]) == innet_auth_tag_of(t);
}

/* AuthKeys::open on a datagram of `len` bytes in scratch `buf`: 1 if it
 * ends in a trailer that checks (its message is the first len - 9 bytes). */
static __always_inline int innet_auth_open_buf(const struct innet_auth *a, const __u8 *buf, __u32 len)
{
	if (len < INNET_AUTH_TRAILER_LEN || len > INNET_AUTH_MSG_MAX + INNET_AUTH_TRAILER_LEN)
		return 0;
	__u32 m = len - INNET_AUTH_TRAILER_LEN;
	return innet_auth_open_bytes(a, buf, m, INNET_AUTH_MSG_WORDS, buf + m);
}

static __always_inline void innet_auth_trailer(__u8 *t, const struct innet_auth_key *k, __u64 tag)
{
	t[0] = (__u8)k->id;
	__builtin_memcpy(t + 1, &tag, 8);
}

/* AuthKeys::seal_in_place: writes the trailer of the `words`-word message
 * at `m` to `t` with the sealing key. */
static __always_inline void innet_auth_seal(const struct innet_auth *a, const __u8 *m, __u32 words, __u8 *t)
{
	const struct innet_auth_key *k = &a->keys[0];
	innet_auth_trailer(t, k, innet_siphash_words_id(k, m, words, (__u8)k->id));
}

/* innet_auth_seal for the `len`-byte message at `m` (innet_siphash_id). */
static __always_inline void innet_auth_seal_bytes(const struct innet_auth *a, const __u8 *m, __u32 len,
						  __u32 max_words, __u8 *t)
{
	const struct innet_auth_key *k = &a->keys[0];
	innet_auth_trailer(t, k, innet_siphash_id(k, m, len, max_words, (__u8)k->id));
}

#endif /* INNET_AUTH_H */
