"""A tour of innet from Python, notebook style: each `# %%` cell runs on
its own in Jupyter or VS Code, and the whole file runs as a plain script:

    python3 -m venv venv && venv/bin/pip install ./python
    venv/bin/python examples/python/tour.py

Every deployment here runs in this process, on loopback, on ephemeral
ports: the live runtime's software switches and stores (Rust threads).
"""

# %% Transactions: a store behind an optimistic-abort switch (NOCC).
import threading
import time

import innet

with innet.up_txn(mode="optimistic-abort") as d:
    print("switch", d.switch, "store", d.store)
    client = innet.Client(d.switch)
    for _ in range(3):
        r = client.increment(1)
    print("counter 1 is now", innet.counter(r.writes[1]), r)

    # begin / read / write / commit: reads come from what the client knows,
    # the switch or store validates them at commit.
    t = client.begin()
    balance = innet.counter(t.read(1))
    t.write(1, balance - 1)
    t.write(2, b"audit")
    print("commit:", t.commit())

    # Or let the client re-run a body until it commits.
    r = client.run(lambda t: t.write(3, innet.counter(t.read(3)) + 5))
    print("run:", r.status, r.writes)

# %% An optimistic abort: b compares a value a is overwriting right now.
with innet.up_txn(mode="optimistic-abort", store_delay_ms=100.0) as d:
    a, b = innet.Client(d.switch), innet.Client(d.switch)
    a.increment(7)
    b.read([7])
    slow = a.begin()
    slow.read(7)
    slow.write(7, b"written-by-a")
    th = threading.Thread(target=slow.commit)
    th.start()
    time.sleep(0.05)
    t = b.begin()
    t.write(7, innet.counter(t.read(7)) + 1)
    r = t.commit()
    th.join()
    print(f"b: {r.status}, corrected values {r.values}")  # optimistic_abort, a's pending write
    print("switch counters:", {k: v for k, v in d.counters() if "abort" in k})

# %% Consensus (CAANS): submit values, receive them in one total order.
with innet.up_paxos(acceptors=3, learners=2) as paxos:
    for i in range(5):
        paxos.submit(f"cmd-{i}")
    for instance, value in paxos.deliveries(timeout=1.0):
        print("deliver", instance, value)
        if value == b"cmd-4":
            break
    paxos.recover(5, b"noop")  # decide instance 5 (a no-op: nobody proposed)
    print("recovered", paxos.deliver(timeout=2.0))

# %% Chain replication (NetCRAQ): put at the head, get from any node.
with innet.up_chain(protocol="netcraq", nodes=3) as chain:
    head, tail = chain.client(near=0), chain.client(near=2)
    head.put(42, b"replicated")
    print("tail reads", tail.get(42), "from", chain.nodes)
