/* innet_paxos.h: consensus as a network service (CAANS), for C programs.
 *
 * The application API of "Network Hardware-Accelerated Consensus" (Dang et
 * al. 2016, section 3.1, Figure 4): submit a value, get every decided value
 * through a deliver callback, and recover an instance. Built from Rust
 * (crates/paxos-c) as libinnet_paxos_c.so; see README.md, "Consensus".
 *
 * innet_paxos_start() runs a whole deployment on loopback inside the calling
 * process (coordinator and acceptors as software switches or processes, a
 * software backup coordinator, the learners) and one proposer for this
 * handle. Callbacks run on the caller's thread, inside innet_paxos_poll().
 */
#ifndef INNET_PAXOS_H
#define INNET_PAXOS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Widest value one submit carries (bytes); wider values go by reference. */
#define INNET_PAXOS_VALUE_MAX 24

typedef struct InnetPaxos innet_paxos;

/* Called once per decided instance, in instance order. A value resubmitted
 * after a timeout is delivered once. len == 0: a no-op (a gap that recovery
 * filled); applications discard it. `value` is valid during the call only. */
typedef void (*innet_paxos_deliver_fn)(void *ctx, uint32_t instance, const uint8_t *value, size_t len);

/* data_plane: "switch" (coordinator and acceptors in user-space software
 * switches) or "process" (as ordinary processes); NULL means "switch".
 * Returns NULL on error. */
innet_paxos *innet_paxos_start(const char *data_plane, uint32_t acceptors, uint32_t learners);

/* Registers the deliver callback and its context. Returns 0. */
int innet_paxos_set_deliver(innet_paxos *h, innet_paxos_deliver_fn deliver, void *ctx);

/* Submits len <= INNET_PAXOS_VALUE_MAX bytes; the library resubmits until a
 * quorum of acceptors voted for it. Returns 0, or -1 on error. */
int innet_paxos_submit(innet_paxos *h, const uint8_t *value, size_t len);

/* Runs phase 1 and 2 with a no-op for `instance` to learn what was decided
 * there; the outcome comes through the deliver callback. Returns 0 or -1. */
int innet_paxos_recover(innet_paxos *h, uint32_t instance);

/* Delivers what arrived, waiting up to timeout_ms for the first delivery.
 * Returns the number of deliveries (callbacks made). */
int innet_paxos_poll(innet_paxos *h, uint32_t timeout_ms);

/* Stops the deployment and frees the handle. */
void innet_paxos_stop(innet_paxos *h);

#ifdef __cplusplus
}
#endif

#endif /* INNET_PAXOS_H */
