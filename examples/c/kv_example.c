/* A C client of innet's key-value service (include/innet_kv.h):
 *
 *   kv_example HOST:PORT,HOST:PORT,HOST:PORT [increments]
 *
 * puts, reads, compares-and-sets and deletes a key, then counts to
 * `increments` (default 200) on key "counter" by compare-and-set, printing
 * "count N" as it goes (a test kills a replica meanwhile) and finally
 * "counter VALUE failovers F". Exits 1 on any error. Build:
 *
 *   cc -Wall -Iinclude examples/c/kv_example.c -Ltarget/release -linnet_paxos_c -o kv_example
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "innet_kv.h"

#define KEY(s) (const uint8_t *)(s), strlen(s)

static int fail(const char *what)
{
	fprintf(stderr, "kv_example: %s failed\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: kv_example HOST:PORT,HOST:PORT,... [increments]\n");
		return 2;
	}
	long total = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
	innet_kv *kv = innet_kv_connect(argv[1], 400);
	if (!kv)
		return fail("connect");
	uint8_t buf[64];
	size_t len = 0;
	if (innet_kv_put(kv, KEY("greeting"), KEY("hello")) != 0)
		return fail("put");
	if (innet_kv_get(kv, KEY("greeting"), buf, sizeof buf, &len) != 1 || len != 5 || memcmp(buf, "hello", 5) != 0)
		return fail("get");
	if (innet_kv_cas(kv, KEY("greeting"), KEY("nope"), KEY("x")) != 0)
		return fail("cas that must not hold");
	if (innet_kv_cas(kv, KEY("greeting"), KEY("hello"), KEY("bye")) != 1)
		return fail("cas");
	if (innet_kv_delete(kv, KEY("greeting")) != 0 || innet_kv_get(kv, KEY("greeting"), buf, sizeof buf, &len) != 0)
		return fail("delete");
	if (innet_kv_cas(kv, KEY("counter"), NULL, 0, KEY("0")) != 1)
		return fail("cas on an absent key");
	for (long n = 0; n < total; n++) {
		char old[32], new[32];
		snprintf(old, sizeof old, "%ld", n);
		snprintf(new, sizeof new, "%ld", n + 1);
		/* Each increment expects the previous value: applied twice, the
		 * second application would fail and so would the next CAS. */
		if (innet_kv_cas(kv, KEY("counter"), KEY(old), KEY(new)) != 1)
			return fail("increment");
		printf("count %ld\n", n + 1);
		fflush(stdout);
	}
	if (innet_kv_get(kv, KEY("counter"), buf, sizeof buf - 1, &len) != 1 || len >= sizeof buf)
		return fail("reading the counter");
	buf[len] = 0;
	printf("counter %s failovers %llu\n", (char *)buf, (unsigned long long)innet_kv_failovers(kv));
	innet_kv_close(kv);
	return 0;
}
