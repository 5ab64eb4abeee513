/* innet_kv.h: a client of innet's consensus-replicated key-value service
 * (issue 24; docs/paxos.md, "The key-value service over the network"), for C
 * programs. Built from Rust (crates/paxos-c) into libinnet_paxos_c.so; the
 * client is the Rust one (innet_live::kv_client::KvNetClient).
 *
 * The replicas are `innet kv-replica` processes; give the client their client
 * ports. Every request carries the client's random id and the next sequence
 * number; without an answer within the timeout it is resent, same id and
 * number, to the next replica, and the replicas apply it once. A call fails
 * (-1) only when no replica answered for 30 s, or on bad arguments. Keys up
 * to 1 KiB, values up to 1 MiB. One request at a time per handle.
 */
#ifndef INNET_KV_H
#define INNET_KV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct InnetKv innet_kv;

/* replicas: "HOST:PORT,HOST:PORT,..." (the first is asked first);
 * timeout_ms: wait per replica (0: 500 ms). NULL on error. */
innet_kv *innet_kv_connect(const char *replicas, uint32_t timeout_ms);

/* 0, or -1 on error. */
int innet_kv_put(innet_kv *h, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len);
int innet_kv_delete(innet_kv *h, const uint8_t *key, size_t key_len);

/* 1: found, its length in *len and its first `cap` bytes in buf (ask again
 * with room for *len if that was more); 0: no such key; -1: error.
 * Reads are ordered through consensus (linearizable). */
int innet_kv_get(innet_kv *h, const uint8_t *key, size_t key_len, uint8_t *buf, size_t cap, size_t *len);

/* Sets key to value if it holds `expected` (expected == NULL: if the key is
 * absent). 1: done; 0: the key held something else; -1: error. */
int innet_kv_cas(innet_kv *h, const uint8_t *key, size_t key_len, const uint8_t *expected, size_t expected_len,
		 const uint8_t *value, size_t value_len);

/* Times a request moved on to another replica (a timeout or BUSY). */
uint64_t innet_kv_failovers(const innet_kv *h);

/* Frees the handle. */
void innet_kv_close(innet_kv *h);

#ifdef __cplusplus
}
#endif

#endif /* INNET_KV_H */
