"""The transaction client against live loopback deployments."""

import threading
import time

import pytest

import innet


def test_increments_commit_and_count(txn):
    c = innet.Client(txn.switch)
    for i in range(1, 21):
        r = c.increment(7)
        assert r.committed and r.status == "committed"
        assert innet.counter(r.writes[7]) == i
    # Another client reads what the first wrote, through a read transaction.
    assert innet.Client(txn.switch).read([7]) == {7: b"20"}


def test_begin_read_write_commit(txn):
    c = innet.Client(txn.switch)
    t = c.begin()
    assert t.read(1) == b""  # never written: the empty value
    t.write(1, b"alpha")
    t.write(2, "beta")
    t.write(3, 42)
    assert t.read(1) == b"alpha"  # its own write
    r = t.commit()
    assert r.committed, r
    assert r.writes == {1: b"alpha", 2: b"beta", 3: b"42"}
    with pytest.raises(innet.InnetError):
        t.commit()
    assert innet.Client(txn.switch).read([1, 2, 3]) == {1: b"alpha", 2: b"beta", 3: b"42"}


def test_stale_compare_aborts_with_the_current_value(txn):
    a, b = innet.Client(txn.switch), innet.Client(txn.switch)
    assert a.increment(9).committed
    b.read([9])  # b knows 1
    assert a.increment(9).committed  # now 2; b still believes 1
    t = b.begin()
    assert t.read(9) == b"1"
    t.write(9, innet.counter(t.read(9)) + 1)
    r = t.commit()
    assert not r.committed and r.status in ("aborted", "optimistic_abort"), r
    assert r.values[9] == b"2"  # the correction
    assert b.known_value(9) == b"2"
    # Re-run on the corrected value: commits.
    r = b.run(lambda t: t.write(9, innet.counter(t.read(9)) + 1))
    assert r.committed and r.writes == {9: b"3"}


def test_optimistic_abort_seen_from_python():
    """Two clients conflict on one key through an optimistic-abort switch:
    while a's write is on its way to the (200 ms away) store, b's compare
    of the old value is aborted by the switch with a's pending value."""
    with innet.up_txn(mode="optimistic-abort", store_delay_ms=200.0) as d:
        a = innet.Client(d.switch, timeout_ms=3000)
        b = innet.Client(d.switch, timeout_ms=3000)
        assert a.increment(5).committed  # 1; the switch learns key 5
        assert b.read([5]) == {5: b"1"}
        got = {}

        def write_a():
            t = a.begin()
            t.read(5)
            t.write(5, b"from-a")
            got["a"] = t.commit()

        th = threading.Thread(target=write_a)
        th.start()
        time.sleep(0.1)  # a's request is between the switch and the store
        t = b.begin()
        assert t.read(5) == b"1"
        t.write(5, b"from-b")
        r = t.commit()
        th.join()
        assert got["a"].committed, got["a"]
        assert r.status == "optimistic_abort" and r.optimistic and r.from_switch, r
        assert r.values == {5: b"from-a"}  # the corrected value: a's write in flight
        assert dict(d.counters())["optimistically_aborted"] >= 1
        # b learned the correction: its next transaction reads a's value.
        t = b.begin()
        assert t.read(5) == b"from-a"
        t.write(5, b"from-b")
        assert t.commit().committed
        assert innet.Client(d.switch).read([5]) == {5: b"from-b"}


def test_client_against_the_store_directly():
    """Only a deployment that lets clients use its store takes them there;
    by default the store takes requests from its switch alone (a request
    the switch aborted, sent to the store, would otherwise commit)."""
    with innet.up_txn(store_clients=True) as d:
        c = innet.Client(d.store)
        assert c.increment(11).committed
        assert c.increment(11).writes == {11: b"2"}
    with innet.up_txn() as d:
        with pytest.raises(innet.TimeoutError):
            innet.Client(d.store, timeout_ms=20, max_resends=1).increment(11)


def test_no_answer_raises_timeout():
    with innet.up_txn() as d:
        dead = d.switch
    c = innet.Client(dead, timeout_ms=20, max_resends=1)
    with pytest.raises(innet.TimeoutError) as e:
        c.increment(1)
    assert isinstance(e.value, TimeoutError) and isinstance(e.value, innet.InnetError)


def test_bad_arguments_raise_config_error(txn):
    with pytest.raises(innet.ConfigError):
        innet.up_txn(mode="no-such-mode")
    with pytest.raises(innet.ConfigError):
        innet.Client("not an address")
    with pytest.raises(ValueError):
        innet.Client(txn.switch).begin().write(1, b"seventeen bytes!!")
    with pytest.raises(innet.ConfigError):
        innet.counter(b"abc")


def test_up_txn_from_a_topology_file(tmp_path):
    f = tmp_path / "txn.toml"
    f.write_text(
        """
[[node]]
name = "store"
role = "store"
listen = "127.0.0.1:0"

[[node]]
name = "switch"
role = "switch"
listen = "127.0.0.1:0"
mode = "early-abort"
upstream = "store"
"""
    )
    with innet.up_txn(f) as d:
        assert set(d.addresses) == {"store", "switch"}
        assert d.switch == d.addresses["switch"]
        c = innet.Client(d.switch)
        for _ in range(3):
            assert c.increment(1).committed
        assert innet.Client(d.switch).read([1]) == {1: b"3"}
    with pytest.raises(innet.ConfigError):
        innet.up_chain(f)


def test_clients_in_threads_each_commit_every_increment(txn):
    """Network waits release the GIL: four threads, a client each, one
    counter; every increment commits once (re-run on aborts)."""
    n, per = 4, 25

    def work():
        c = innet.Client(txn.switch)
        for _ in range(per):
            assert c.increment(3).committed

    threads = [threading.Thread(target=work) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert innet.Client(txn.switch).read([3]) == {3: str(n * per).encode()}
