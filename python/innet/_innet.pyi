"""Type stubs of the Rust extension (python/src/lib.rs)."""

from os import PathLike
from types import TracebackType
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Type, TypeVar, Union

VALUE_LEN: int
"""Bytes in a transaction or chain value (16)."""
PAXOS_VALUE_MAX: int
"""Most bytes one CAANS value carries."""

ValueLike = Union[bytes, str, int]
"""A value: bytes or str (at most VALUE_LEN bytes) or an int counter (ASCII decimal)."""

def counter(value: ValueLike) -> int:
    """The integer a counter value holds (b"" is 0)."""

class TxnResult:
    """The outcome of one commit, or of an increment after its re-runs."""

    status: str
    """"committed", "aborted" or "optimistic_abort"."""
    committed: bool
    from_switch: bool
    """Whether the switch answered (else the store, or this client)."""
    values: Dict[int, bytes]
    """The reply's VALUE ops: a read's values, or an abort's corrected values."""
    reads: Dict[int, bytes]
    writes: Dict[int, bytes]
    attempts: int
    latency_ms: float
    client_id: int
    @property
    def optimistic(self) -> bool:
        """An optimistic abort: the correction is a write still in flight."""
    def __bool__(self) -> bool: ...

class Transaction:
    """One transaction of a Client (from Client.begin())."""

    def read(self, key: int) -> bytes:
        """The value of key as this transaction sees it (validated at commit)."""
    def write(self, key: int, value: ValueLike) -> None:
        """Buffers a write."""
    def commit(self) -> TxnResult:
        """Sends the transaction (one attempt). Raises innet.TimeoutError without an answer."""

class Client:
    """A transaction client of one switch or store address ("HOST:PORT")."""

    def __init__(
        self,
        target: str,
        *,
        timeout_ms: float = 1000.0,
        max_resends: int = 5,
        client_id: Optional[int] = None,
        client_delay_ms: float = 0.0,
    ) -> None: ...
    @property
    def target(self) -> str: ...
    @property
    def client_id(self) -> int: ...
    def begin(self) -> Transaction:
        """Starts a transaction."""
    def read(self, keys: List[int]) -> Dict[int, bytes]:
        """A read transaction (one round trip)."""
    def known_value(self, key: int) -> Optional[bytes]:
        """The value this client last learned for key."""
    def increment(self, key: int, *, retry_limit: int = 1000) -> TxnResult:
        """Increments the counter at key, re-running on aborts."""
    def run(self, body: Callable[[Transaction], object], *, retry_limit: int = 1000) -> TxnResult:
        """Runs body(txn) and commits, re-running on aborts."""

class Deliveries(Iterator[Tuple[int, bytes]]):
    """Deliveries (instance, value) of a Paxos; ends after a timeout with none."""

    def __iter__(self) -> "Deliveries": ...
    def __next__(self) -> Tuple[int, bytes]: ...

class Paxos:
    """The CAANS API over a deployment this object starts on loopback."""

    def __init__(self, *, acceptors: int = 3, learners: int = 2, data_plane: str = "switch") -> None: ...
    @property
    def addresses(self) -> Dict[str, str]: ...
    def submit(self, value: Union[bytes, str]) -> int:
        """Submits a value; returns its request id."""
    def recover(self, instance: int, noop: Optional[Union[bytes, str]] = None) -> None:
        """Learns what was decided in instance (proposing noop if nothing was voted)."""
    def on_deliver(self, callback: Callable[[int, bytes], object]) -> None:
        """Registers the deliver callback (called from poll)."""
    def poll(self, timeout: float = 0.0) -> int:
        """Calls the callback for every delivery that arrived; waits up to timeout s for the first."""
    def deliver(self, timeout: float = 1.0) -> Optional[Tuple[int, bytes]]:
        """The next delivery, or None after timeout seconds."""
    def deliveries(self, timeout: float = 1.0) -> Deliveries:
        """An iterator over deliveries, in instance order."""
    def stop(self) -> None: ...
    def __enter__(self) -> "Paxos": ...
    def __exit__(
        self,
        t: Optional[Type[BaseException]],
        v: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class KvClient:
    """A client of the key-value service's replicas (``innet kv-replica``
    client ports); resends to the next replica after ``timeout_ms``, raises
    ``innet.TimeoutError`` after ``deadline_ms`` without an answer."""

    def __init__(self, replicas: List[str], *, timeout_ms: float = 500.0, deadline_ms: float = 30000.0) -> None: ...
    def put(self, key: Union[bytes, str], value: Union[bytes, str]) -> None: ...
    def get(self, key: Union[bytes, str]) -> Optional[bytes]: ...
    def delete(self, key: Union[bytes, str]) -> None: ...
    def cas(self, key: Union[bytes, str], expected: Optional[Union[bytes, str]], value: Union[bytes, str]) -> bool: ...
    @property
    def client_id(self) -> int: ...
    @property
    def failovers(self) -> int: ...
    @property
    def sends(self) -> int: ...
    @property
    def current(self) -> str: ...

class ChainClient:
    """Get and put against a chain (nodes "HOST:PORT", head first)."""

    def __init__(
        self,
        nodes: List[str],
        *,
        protocol: str = "netcraq",
        near: int = 0,
        timeout_ms: float = 100.0,
        deadline_ms: float = 5000.0,
    ) -> None: ...
    @property
    def nodes(self) -> List[str]: ...
    @property
    def protocol(self) -> str: ...
    def get(self, key: int) -> bytes: ...
    def put(self, key: int, value: ValueLike) -> None: ...

_D = TypeVar("_D", bound="Deployment")

class Deployment:
    """Nodes running in this process: addresses, stop, and `with` (stops on exit)."""

    @property
    def addresses(self) -> Dict[str, str]:
        """Every node's address, by name."""
    def stop(self) -> None:
        """Stops and joins every node."""
    def __enter__(self: _D) -> _D: ...
    def __exit__(
        self,
        t: Optional[Type[BaseException]],
        v: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class TxnDeployment(Deployment):
    """A running store and switch (or a topology file's nodes)."""

    @property
    def switch(self) -> str: ...
    @property
    def store(self) -> str: ...
    def counters(self) -> List[Tuple[str, int]]:
        """The (first) switch's counters."""

class ChainDeployment(Deployment):
    """A running chain and its control plane."""

    @property
    def nodes(self) -> List[str]: ...
    @property
    def protocol(self) -> str: ...
    def client(self, *, near: int = 0, timeout_ms: float = 100.0, deadline_ms: float = 5000.0) -> ChainClient: ...

def up_txn(
    topology: Union[str, "PathLike[str]", None] = None,
    *,
    mode: str = "optimistic-abort",
    store_delay_ms: float = 0.0,
    client_delay_ms: float = 0.0,
    cache_slots: int = 4096,
    store_clients: bool = False,
) -> TxnDeployment:
    """A store and a switch on loopback, or a transaction topology file's nodes.

    The store takes requests only from its switch unless ``store_clients``."""

def up_chain(
    topology: Union[str, "PathLike[str]", None] = None,
    *,
    protocol: str = "netcraq",
    nodes: int = 3,
    keys: int = 64,
) -> ChainDeployment:
    """A chain and its control plane on loopback, or a chain topology file's nodes."""

def up_paxos(*, acceptors: int = 3, learners: int = 2, data_plane: str = "switch") -> Paxos:
    """A CAANS deployment on loopback with this process's proposer and learner."""

def _panic_for_tests() -> None:
    """Panics behind the boundary; raises InnetError (a test hook)."""
