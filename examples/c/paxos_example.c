/* Submits ten values through CAANS and prints them as they are delivered.
 *
 *   cargo build --release -p innet-paxos-c
 *   gcc -Wall -Wextra -Iinclude examples/c/paxos_example.c -Ltarget/release -linnet_paxos_c -o target/paxos_example
 *   LD_LIBRARY_PATH=target/release ./target/paxos_example [switch|process]
 */
#include <stdio.h>
#include <string.h>

#include "innet_paxos.h"

#define VALUES 10

static void deliver(void *ctx, uint32_t instance, const uint8_t *value, size_t len) {
    int *delivered = ctx;
    if (len == 0) {
        return; /* a no-op */
    }
    printf("deliver instance %u: %.*s\n", instance, (int)len, (const char *)value);
    (*delivered)++;
}

int main(int argc, char **argv) {
    const char *data_plane = argc > 1 ? argv[1] : "switch";
    innet_paxos *px = innet_paxos_start(data_plane, 3, 2);
    if (!px) {
        fprintf(stderr, "innet_paxos_start failed\n");
        return 1;
    }
    int delivered = 0;
    innet_paxos_set_deliver(px, deliver, &delivered);
    for (int i = 0; i < VALUES; i++) {
        char v[INNET_PAXOS_VALUE_MAX];
        int n = snprintf(v, sizeof v, "hello %d", i);
        if (innet_paxos_submit(px, (const uint8_t *)v, (size_t)n) != 0) {
            fprintf(stderr, "submit failed\n");
            return 1;
        }
    }
    for (int tries = 0; delivered < VALUES && tries < 100; tries++) {
        innet_paxos_poll(px, 50);
    }
    innet_paxos_stop(px);
    printf("%d of %d values delivered (%s data plane)\n", delivered, VALUES, data_plane);
    return delivered == VALUES ? 0 : 1;
}
