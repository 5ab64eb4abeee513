"""The chain client against live loopback chains."""

import pytest

import innet


@pytest.mark.parametrize("protocol", ["netcraq", "netchain"])
def test_put_then_get(protocol):
    with innet.up_chain(protocol=protocol, nodes=3) as ch:
        assert ch.protocol == protocol and len(ch.nodes) == 3
        c = ch.client()
        c.put(3, b"hello")
        c.put(4, "world")
        c.put(5, 12345)
        assert c.get(3) == b"hello"
        assert c.get(4) == b"world"
        assert innet.counter(c.get(5)) == 12345
        # A read entering the chain at the tail sees the same values.
        tail = ch.client(near=2)
        assert tail.get(3) == b"hello"
        c.put(3, b"again")
        assert tail.get(3) == b"again"


def test_up_chain_from_a_topology_file(tmp_path):
    f = tmp_path / "chain.toml"
    nodes = "".join(
        f'\n[[node]]\nname = "node{i}"\nrole = "node"\nlisten = "127.0.0.1:0"\n' for i in range(3)
    )
    f.write_text(
        '[chain]\nprotocol = "netcraq"\nkeys = 16\n'
        + nodes
        + '\n[[node]]\nname = "control"\nrole = "control"\nlisten = "127.0.0.1:0"\n'
    )
    with innet.up_chain(f) as ch:
        assert len(ch.nodes) == 3 and "control" in ch.addresses
        c = innet.ChainClient(ch.nodes)
        c.put(1, b"topo")
        assert c.get(1) == b"topo"


def test_deployments_stop_on_exit_and_a_stopped_chain_times_out():
    with innet.up_chain(nodes=2) as ch:
        assert isinstance(ch, innet.Deployment)
        c = ch.client()
        c.put(2, b"x")
    ch.stop()  # a second stop does nothing
    with pytest.raises(innet.TimeoutError):
        innet.ChainClient(ch.nodes, timeout_ms=10, deadline_ms=100).get(2)
