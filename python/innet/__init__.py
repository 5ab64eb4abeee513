"""innet from Python: in-network transactions, consensus and chain replication.

Everything here runs innet's Rust code (PyO3 bindings, ``innet._innet``): the
transaction client, the CAANS proposer and learner, the chain client and the
live runtime's switches and stores, the key-value service's client; no
protocol is implemented in Python.

>>> import innet
>>> with innet.up_txn() as d:
...     c = innet.Client(d.switch)
...     c.increment(1).committed
True

See docs/python.md.
"""

from innet._innet import (
    PAXOS_VALUE_MAX,
    VALUE_LEN,
    ChainClient,
    ChainDeployment,
    Client,
    Deliveries,
    Deployment,
    KvClient,
    Paxos,
    Transaction,
    TxnDeployment,
    TxnResult,
    counter,
    up_chain,
    up_paxos,
    up_txn,
)
from innet.errors import ConfigError, InnetError, TimeoutError

__all__ = [
    "PAXOS_VALUE_MAX",
    "VALUE_LEN",
    "ChainClient",
    "ChainDeployment",
    "Client",
    "ConfigError",
    "Deliveries",
    "Deployment",
    "InnetError",
    "KvClient",
    "Paxos",
    "TimeoutError",
    "Transaction",
    "TxnDeployment",
    "TxnResult",
    "counter",
    "up_chain",
    "up_paxos",
    "up_txn",
]
