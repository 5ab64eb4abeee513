"""The key-value service from Python (issue 24): ``innet.KvClient`` against
three ``innet kv-replica`` processes of an ``innet up paxos`` deployment
(real processes, UDP, LevelDB). A client counting by compare-and-set keeps
counting while its replica is killed with SIGKILL: one timeout, then the
next replica; every increment applied once (a CAS applied twice would fail
the next one, which expects the previous value)."""

import os
import shutil
import signal
import subprocess
import tempfile

import random
import socket

import pytest

import innet


def innet_binary():
    """The ``innet`` binary: $INNET_BIN, else this checkout's release build."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.environ.get("INNET_BIN") or os.path.join(here, "..", "..", "target", "release", "innet")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no innet binary at {path}: cargo build --release -p innet, or set INNET_BIN")
    return path


def free_block(n):
    """The first of ``n`` consecutive loopback ports free for UDP and TCP,
    below the kernel's ephemeral range (a port inside it may be handed to
    another socket while its replica is down), as
    ``innet_live::ports::free_block`` picks them."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    top = low - n if low > 21000 + n else 65535 - n
    for _ in range(200):
        base = random.randint(20000, top)
        held = []
        try:
            for port in range(base, base + n):
                for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
                    s = socket.socket(socket.AF_INET, kind)
                    held.append(s)
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError(f"no block of {n} free loopback ports")


class Service:
    """``innet up paxos`` and three replicas with client ports, on loopback."""

    def __init__(self, binary, base):
        self.dir = tempfile.mkdtemp(prefix="innet-kv-py-")
        common = ["--base-port", str(base), "--learners", "3"]
        self.procs = [self._spawn([binary, "up", "paxos", *common, "--external-learners", "--proposers", "0"])]
        self.replicas = []
        for i in range(3):
            d = os.path.join(self.dir, f"r{i}")
            args = ["kv-replica", "--id", str(i), "--data-dir", d, *common, "--client-port", str(base + 20 + i)]
            p = self._spawn([binary, *args])
            self.procs.append(p)
            self.replicas.append(p)
        self.ports = [self._client_port(p) for p in self.replicas]

    @staticmethod
    def _spawn(args):
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    @staticmethod
    def _client_port(p):
        for line in p.stdout:
            if line.startswith("client "):
                return line.split()[1]
        raise RuntimeError(f"replica exited with {p.wait()} before printing its client port")

    def kill(self, i):
        self.replicas[i].send_signal(signal.SIGKILL)
        self.replicas[i].wait()

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def service():
    s = Service(innet_binary(), free_block(30))
    yield s
    s.close()


def test_operations_and_failover_across_three_replicas(service):
    c = innet.KvClient(service.ports, timeout_ms=400)
    assert c.client_id != 0
    c.put(b"greeting", "hello")
    assert c.get("greeting") == b"hello"
    assert c.cas("greeting", b"nope", b"x") is False
    assert c.cas("greeting", b"hello", b"bye") is True
    c.delete("greeting")
    assert c.get("greeting") is None
    assert c.cas("counter", None, b"0") is True
    # A second client reaches the same state through another replica.
    other = innet.KvClient(service.ports[1:], timeout_ms=400)
    assert other.get("counter") == b"0"
    total = 200
    for n in range(total):
        if n == 80:
            assert c.current == service.ports[0]
            service.kill(0)  # the client's replica, mid-load
        assert c.cas("counter", str(n), str(n + 1)), f"increment {n} applied twice?"
    assert c.get("counter") == str(total).encode()
    assert other.get("counter") == str(total).encode()
    assert c.failovers == 1, "one timeout, then the next replica"
    assert c.current == service.ports[1]
    big = os.urandom(300_000)  # over TCP, split across ~15,000 instances
    c.put("big", big)
    assert other.get("big") == big


def test_bad_input_is_a_config_error():
    with pytest.raises(innet.ConfigError):
        innet.KvClient([])
    with pytest.raises(innet.ConfigError):
        innet.KvClient(["not an address"])
    with pytest.raises(innet.ConfigError):
        innet.KvClient(["127.0.0.1:1"], timeout_ms=0)


def test_no_replica_is_a_timeout():
    # Nothing listens there: the deadline passes, TimeoutError (also the builtin).
    c = innet.KvClient(["127.0.0.1:9", "127.0.0.1:10"], timeout_ms=50, deadline_ms=300)
    with pytest.raises(TimeoutError):
        c.get("k")
    assert c.failovers >= 4
