"""Every failure reaches Python as one of innet's exceptions (derived from
``Exception``), never as ``pyo3_runtime.PanicException``: that is a
``BaseException``, which ``except Exception`` does not catch, so a careless
argument used to escape every handler an application had.
"""

import pytest

import innet


def raises_innet_error(call):
    """Runs ``call`` and returns the exception, which must be an InnetError
    that ``except Exception`` catches."""
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the point of the test
        assert isinstance(e, innet.InnetError), f"{type(e).__module__}.{type(e).__name__}: {e}"
        return e
    raise AssertionError("no exception")


def test_careless_arguments_are_config_errors():
    cases = [
        lambda: innet.up_txn(cache_slots=3),  # not a power of two (a panic before)
        lambda: innet.up_txn(cache_slots=1 << 40),  # 56 TiB of cache
        lambda: innet.up_paxos(acceptors=0),
        lambda: innet.up_paxos(acceptors=1000),
        lambda: innet.up_paxos(learners=1000),
        lambda: innet.up_chain(nodes=0),
        lambda: innet.up_chain(protocol="netcraq", keys=1 << 30),
    ]
    for call in cases:
        e = raises_innet_error(call)
        assert isinstance(e, innet.ConfigError), e


def test_a_transaction_beyond_255_fragments_is_refused(txn):
    # 1,786 writes need 256 fragments; the wire format numbers 255.
    c = innet.Client(txn.switch)

    def body(t):
        for k in range(1786):
            t.write(k, b"x")

    e = raises_innet_error(lambda: c.run(body))
    assert isinstance(e, innet.ConfigError) and "255 fragments" in str(e), e
    # The client still works.
    assert c.increment(1).committed


def test_the_largest_counter_increments_to_zero(txn):
    # Anyone may write 16 nines; an increment of it asserted in the client.
    c = innet.Client(txn.switch)
    assert c.run(lambda t: t.write(5, b"9999999999999999")).committed
    r = c.increment(5)
    assert r.committed and r.writes[5] == b"0", r


def test_no_rust_panic_crosses_into_python():
    # A deliberate panic behind the boundary (a test hook) arrives as
    # InnetError, which `except Exception` catches.
    e = raises_innet_error(innet._innet._panic_for_tests)
    assert "internal error" in str(e), e
