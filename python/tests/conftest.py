"""Shared fixtures: live deployments on loopback, in this process."""

import pytest

import innet


@pytest.fixture
def txn():
    """A store and an optimistic-abort switch, no delays."""
    with innet.up_txn(mode="optimistic-abort") as d:
        yield d


@pytest.fixture
def paxos():
    """A CAANS deployment: coordinator and 3 acceptors in software switches, 2 learners."""
    with innet.up_paxos(acceptors=3, learners=2, data_plane="switch") as p:
        yield p
