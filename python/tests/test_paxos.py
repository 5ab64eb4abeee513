"""The CAANS API against a live loopback deployment."""

import threading

import pytest

import innet


def test_hundred_values_delivered_in_order(paxos):
    sent = [f"value-{i}".encode() for i in range(100)]
    for v in sent:
        paxos.submit(v)
    got = []
    for instance, value in paxos.deliveries(timeout=5.0):
        got.append((instance, value))
        if len(got) == len(sent):
            break
    assert [v for _, v in got] == sent
    instances = [i for i, _ in got]
    assert instances == list(range(instances[0], instances[0] + 100))


def test_deliver_callback(paxos):
    seen = []
    paxos.on_deliver(lambda instance, value: seen.append((instance, value)))
    for i in range(10):
        paxos.submit(b"cb-%d" % i)
    for _ in range(100):
        if len(seen) >= 10:
            break
        paxos.poll(timeout=0.1)
    assert [v for _, v in seen] == [b"cb-%d" % i for i in range(10)]


def test_recover_decides_a_noop_and_later_values_follow(paxos):
    paxos.submit(b"first")
    assert paxos.deliver(timeout=5.0) == (0, b"first")
    paxos.recover(1, b"noop")
    assert paxos.deliver(timeout=5.0) == (1, b"noop")
    paxos.submit(b"second")
    instance, value = paxos.deliver(timeout=5.0)
    assert value == b"second" and instance >= 2


def test_process_deployment_and_addresses():
    with innet.up_paxos(acceptors=3, learners=1, data_plane="process") as p:
        assert {"coordinator", "acceptor0", "acceptor1", "acceptor2", "backup", "learner0"} <= set(p.addresses)
        for i in range(5):
            p.submit(b"p-%d" % i)
        got = [v for _, v in p.deliveries(timeout=5.0)][:5]
        assert got == [b"p-%d" % i for i in range(5)]
    with pytest.raises(innet.InnetError):
        p.submit(b"after stop")


def test_bad_arguments(paxos):
    with pytest.raises(innet.ConfigError):
        paxos.submit(b"x" * (innet.PAXOS_VALUE_MAX + 1))
    with pytest.raises(innet.ConfigError):
        innet.up_paxos(data_plane="xdp")
    with pytest.raises(innet.ConfigError):
        innet.up_paxos(acceptors=0)


def test_submit_from_a_thread_while_iterating(paxos):
    """Deliveries wait without holding the deployment, so another thread
    submits meanwhile."""
    sent = [b"t-%d" % i for i in range(50)]

    def produce():
        for v in sent:
            paxos.submit(v)

    th = threading.Thread(target=produce)
    th.start()
    got = []
    for _, value in paxos.deliveries(timeout=5.0):
        got.append(value)
        if len(got) == len(sent):
            break
    th.join()
    assert got == sent
