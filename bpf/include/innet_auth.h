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
 * word, four to finish. Here for messages of a whole number of 8-byte
 * words, read from the packet (the Paxos header: 6 words), so the last
 * block holds only the key id and the length. Include after bpf_helpers.h.
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

/* SipHash-2-4 under `k` of the `words` 8-byte words at `m` followed by the
 * byte `id` (`words` a constant: the loop unrolls). */
static __always_inline __u64 innet_siphash_words_id(const struct innet_auth_key *k, const __u8 *m, __u32 words,
						      __u8 id)
{
	__u64 v0 = k->k0 ^ 0x736f6d6570736575ULL;
	__u64 v1 = k->k1 ^ 0x646f72616e646f6dULL;
	__u64 v2 = k->k0 ^ 0x6c7967656e657261ULL;
	__u64 v3 = k->k1 ^ 0x7465646279746573ULL;
#pragma unroll
	for (__u32 i = 0; i < words; i++) {
		__u64 w;
		__builtin_memcpy(&w, m + 8 * i, 8);
		v3 ^= w;
		INNET_SIPROUND(v0, v1, v2, v3);
		INNET_SIPROUND(v0, v1, v2, v3);
		v0 ^= w;
	}
	__u64 b = ((__u64)(8 * words + 1) << 56) | id;
	v3 ^= b;
	INNET_SIPROUND(v0, v1, v2, v3);
	INNET_SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	INNET_SIPROUND(v0, v1, v2, v3);
	INNET_SIPROUND(v0, v1, v2, v3);
	INNET_SIPROUND(v0, v1, v2, v3);
	INNET_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* AuthKeys::open for the `words`-word message at `m` and its trailer at
 * `t`: 1 if the tag checks under the key its id names. */
static __always_inline int innet_auth_open(const struct innet_auth *a, const __u8 *m, __u32 words, const __u8 *t)
{
	__u64 tag;
	__builtin_memcpy(&tag, t + 1, 8);
#pragma unroll
	for (int i = 0; i < INNET_AUTH_MAX_KEYS; i++) {
		const struct innet_auth_key *k = &a->keys[i];
		if (k->valid && k->id == t[0])
			return innet_siphash_words_id(k, m, words, t[0]) == tag;
	}
	return 0;
}

/* AuthKeys::seal_in_place: writes the trailer of the `words`-word message
 * at `m` to `t` with the sealing key. */
static __always_inline void innet_auth_seal(const struct innet_auth *a, const __u8 *m, __u32 words, __u8 *t)
{
	const struct innet_auth_key *k = &a->keys[0];
	__u64 tag = innet_siphash_words_id(k, m, words, (__u8)k->id);
	t[0] = (__u8)k->id;
	__builtin_memcpy(t + 1, &tag, 8);
}

#endif /* INNET_AUTH_H */
