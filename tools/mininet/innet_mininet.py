#!/usr/bin/python3
"""innet deployments as Mininet networks.

Any innet topology file (docs/live.md: one TOML format for the transaction
service, Paxos and the chain) becomes a Mininet network: one Mininet host per
innet machine (a node without a `machine` is a machine of its own, a client
group is one), and Linux bridges shaped like the deployment's links. Each
host runs `innet up SERVICE --topology FILE --only MACHINE --place ...`: the
file stays as written (its addresses are for one machine's loopback) and
`--place MACHINE=IP` puts each machine's nodes on its host's address.

The file is parsed once, by innet (`innet topology show --json FILE`).

Link delays are innet's own: the runtime emulates each link's delay in user
space at one end (docs/live.md, "Distances"). Mininet's TCLink delays need
netem, which these machines lack, so the Mininet links carry no delay.

Mininet users:

    mn --custom tools/mininet/innet_mininet.py --topo innet,FILE \\
       --switch lxbr --controller none \\
       --pre <(/usr/bin/python3 tools/mininet/innet_mininet.py commands FILE)

(`commands` prints the CLI lines that start every node in its host.) A
script: `net = Mininet(topo=InnetTopo(FILE), switch=LinuxBridge,
controller=None)`. Or all of it, with a workload and a JSON report:

    /usr/bin/python3 tools/mininet/innet_mininet.py run FILE --duration-s 5

which is what `innet mininet --topology FILE` runs. `run` stops what it
started and removes only what it made (`net.stop()`); it never runs
Mininet's global cleanup (`mn -c`), which kills processes by name on the
whole machine. `mn` itself runs that cleanup after an exception.

Mininet is installed for Debian's /usr/bin/python3 (`apt install mininet
bridge-utils`, or `bash scripts/setup.sh`).
"""

import argparse
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

try:
    from mininet.topo import Topo
except ImportError:  # `layout` and `commands` work without Mininet
    Topo = object

INSTALL = "apt install mininet bridge-utils (or bash scripts/setup.sh)"

# Roles whose nodes generate load (innet_live::topology::is_load).
LOAD_ROLES = {"txn": {"client"}, "paxos": {"proposer"}, "chain": {"client"}}

# `mn --custom` runs this file without __file__ or __name__, and copies every
# global of it into its own.
_FILE = globals().get("__file__")
HERE = os.path.dirname(os.path.abspath(_FILE)) if _FILE else None


def find_innet(innet=None):
    """The innet binary: `innet`, INNET_BIN, the checkout's target/release/innet
    (beside this file, or under the current directory), or PATH."""
    checkout = os.path.join(HERE, "..", "..") if HERE else None
    for c in (innet, os.environ.get("INNET_BIN"), checkout and os.path.join(checkout, "target", "release", "innet"),
              os.path.join("target", "release", "innet")):
        if c and os.access(c, os.X_OK):
            return os.path.abspath(c)
    c = shutil.which("innet")
    if c:
        return c
    raise SystemExit("innet_mininet: no innet binary: build it (cargo build --release -p innet) or set INNET_BIN")


def deployment(topology_file, innet):
    """The resolved deployment of a topology file, as innet parses it."""
    p = subprocess.run([innet, "topology", "show", "--json", topology_file], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(p.stderr.strip() or "innet topology show failed")
    return json.loads(p.stdout)


NAME_OK = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,9}$")
GENERATED = re.compile(r"^[hs][0-9]+$")


def host_name(machine, k):
    """A machine's Mininet host name: the machine's own when it makes a valid,
    short interface prefix (at most 10 characters, `NAME-eth0` fits 15), else hK."""
    if NAME_OK.match(machine) and not GENERATED.match(machine) and not machine.startswith("innet"):
        return machine
    return "h%d" % (k + 1)


def layout(dep, ip_base="10.0.0.0/8"):
    """Hosts, bridges and links of the Mininet network for a deployment.

    One host per machine, at ip_base + 1, + 2, ... in node order. A machine
    that shares a deployment link with another machine gets a bridge of its
    own (sK) with its host on it, and the deployment's links join those
    bridges (a link that would close a loop is left out: the bridges run no
    spanning tree, and the segment is connected without it). Machines
    without such links, and one bridge of every group of linked machines,
    hang off a fabric bridge when there is more than one group.
    """
    net = ipaddress.ip_network(ip_base, strict=False)
    machines, members = [], {}
    for n in dep["nodes"]:
        m = n["machine"]
        if m not in members:
            machines.append(m)
            members[m] = []
        members[m].append(n)
    if len(machines) + 2 > net.num_addresses:
        raise SystemExit("ip base %s has no room for %d hosts" % (ip_base, len(machines)))
    service = dep["service"]
    machine_of = {n["name"]: n["machine"] for n in dep["nodes"]}
    hosts = []
    for k, m in enumerate(machines):
        roles = [n["role"] for n in members[m]]
        ups = sorted({n["upstream"] for n in members[m] if n.get("upstream") and machine_of[n["upstream"]] != m})
        hosts.append({
            "machine": m,
            "host": host_name(m, k),
            "ip": str(net[k + 1]),
            "prefix": net.prefixlen,
            "nodes": [n["name"] for n in members[m]],
            "upstream": ups,
            "load": any(r in LOAD_ROLES[service] for r in roles),
            "control": "control" in roles,
        })
    # Machine-to-machine links, then a spanning forest of them.
    pairs = []
    for l in dep["links"]:
        a, b = machine_of[l["a"]], machine_of[l["b"]]
        if a != b and (a, b) not in pairs and (b, a) not in pairs:
            pairs.append((a, b))
    parent = {m: m for m in machines}

    def root(m):
        while parent[m] != m:
            m = parent[m]
        return m

    tree = []
    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[rb] = ra
            tree.append((a, b))
    linked = [m for m in machines if any(m in p for p in tree)]
    bridge = {m: "s%d" % (i + 1) for i, m in enumerate(linked)}
    host_of = {h["machine"]: h["host"] for h in hosts}
    links = [(host_of[m], bridge[m]) for m in linked]
    links += [(bridge[a], bridge[b]) for a, b in tree]
    groups = []  # one representative per connected group
    for m in machines:
        if root(m) not in [root(g) for g in groups]:
            groups.append(m)
    bridges = [bridge[m] for m in linked]
    if len(groups) > 1 or not linked:
        fabric = "s%d" % (len(linked) + 1)
        bridges.append(fabric)
        for g in groups:
            links.append((bridge[g], fabric) if g in bridge else (host_of[g], fabric))
    return {"service": service, "hosts": hosts, "bridges": bridges, "links": links}


class InnetTopo(Topo):
    """A Mininet topology built from an innet topology file (see `layout`).

    `mn --custom innet_mininet.py --topo innet,FILE --switch lxbr --controller none`,
    or `InnetTopo(FILE)` in a script. Keyword arguments: `innet` (the binary
    that parses the file), `ip_base` (default 10.0.0.0/8).
    """

    def build(self, topology_file, innet=None, ip_base="10.0.0.0/8", dep=None):
        self.topology_file = os.path.abspath(topology_file)
        self.innet = find_innet(innet)
        self.deployment = dep or deployment(self.topology_file, self.innet)
        self.innet_layout = layout(self.deployment, ip_base)
        for h in self.innet_layout["hosts"]:
            self.addHost(h["host"], ip="%s/%d" % (h["ip"], h["prefix"]))
        for s in self.innet_layout["bridges"]:
            self.addSwitch(s)
        for a, b in self.innet_layout["links"]:
            self.addLink(a, b)


topos = {"innet": InnetTopo}


def places(lay):
    """`--place MACHINE=IP` for every machine."""
    return ["--place=%s=%s" % (h["machine"], h["ip"]) for h in lay["hosts"]]


def start_order(lay):
    """Servers first (a chain's control plane after the switches it
    configures), then the machines with load nodes."""
    hosts = lay["hosts"]
    return ([h for h in hosts if not h["load"] and not h["control"]] + [h for h in hosts if not h["load"] and h["control"]]
            + [h for h in hosts if h["load"]])


def up_command(innet, topology_file, lay, h, up_args, duration_s, server_s=None):
    """`innet up` of one machine: load machines run load for duration_s;
    servers run for server_s, or until stopped."""
    # One token each: Mininet's CLI replaces a word that names a host by its IP.
    cmd = [innet, "up", lay["service"], "--topology=" + topology_file, "--only=" + h["machine"]] + places(lay)
    cmd += up_args
    if h["load"]:
        cmd += ["--duration-s", str(duration_s)]
    elif server_s:
        cmd += ["--duration-s", str(server_s)]
    return cmd


def cmd_commands(a):
    """Mininet CLI lines (for `mn --pre`) that start every node in its host:
    servers first, load a second later; servers stop 3 s after the load
    should have ended, so every output ends with the node's counters."""
    innet = find_innet(a.innet)
    f = os.path.abspath(a.topology)
    lay = layout(deployment(f, innet), a.ip_base)
    out = a.out or tempfile.mkdtemp(prefix="innet-mn-")
    os.makedirs(out, exist_ok=True)
    print("innet_mininet: each node's output goes to %s/HOST.out" % out, file=sys.stderr)
    started_load = False
    for h in start_order(lay):
        if h["load"] and not started_load:
            print("sh sleep 1")
            started_load = True
        cmd = " ".join(up_command(innet, f, lay, h, a.up_arg, a.duration_s, a.duration_s + 4))
        print("%s %s > %s/%s.out 2>&1 &" % (h["host"], cmd, out, h["host"]))


class Proc:
    """An `innet up` in a Mininet host, its output collected by threads."""

    def __init__(self, host, h, cmd):
        self.h, self.cmd = h, cmd
        self.out, self.err = [], []
        self.p = host.popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.threads = [threading.Thread(target=self._read, args=(s, buf), daemon=True)
                        for s, buf in ((self.p.stdout, self.out), (self.p.stderr, self.err))]
        for t in self.threads:
            t.start()

    @staticmethod
    def _read(stream, buf):
        for line in iter(stream.readline, b""):
            buf.append(line.decode(errors="replace").rstrip("\n"))

    def listening(self):
        """Every node of the machine has printed `NAME HOST:PORT`."""
        seen = {l.split(" ", 1)[0] for l in list(self.out) if " " in l}
        return all(n in seen for n in self.h["nodes"])

    def stop(self, grace_s):
        """SIGTERM (innet prints its counters and exits), SIGKILL after grace_s."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(grace_s)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        for t in self.threads:
            t.join(5)

    def failure(self, what):
        tail = "\n".join(self.err[-15:])
        return "%s on host %s (innet up --only %s): status %s\n%s" % (what, self.h["host"], self.h["machine"],
                                                                     self.p.poll(), tail)


class Interrupted(Exception):
    pass


def _interrupted(signum, _frame):
    raise Interrupted("signal %d" % signum)


def root_links():
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return {l.split(": ")[1].split("@")[0] for l in out.splitlines() if ": " in l}


def our_root_names(topo):
    """Bridge and bridge-port names this network makes in the root namespace."""
    bridges = set(topo.switches())
    names = set(bridges)
    for _, _, info in topo.links(withInfo=True):
        for k in ("1", "2"):
            if info["node" + k] in bridges:
                names.add("%s-eth%d" % (info["node" + k], info["port" + k]))
    return names


def cmd_run(a):
    if os.geteuid() != 0:
        raise SystemExit("innet_mininet: Mininet needs root (network namespaces, bridges): run as root")
    try:
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.nodelib import LinuxBridge
    except ImportError:
        raise SystemExit("innet_mininet: Mininet is not installed for %s: %s" % (sys.executable, INSTALL))
    for tool in ("brctl", "mnexec"):
        if not shutil.which(tool):
            raise SystemExit("innet_mininet: %s not found: %s" % (tool, INSTALL))
    setLogLevel("info" if a.verbose else "warning")
    wall0 = time.time()
    innet = find_innet(a.innet)
    f = os.path.abspath(a.topology)
    topo = InnetTopo(f, innet=innet, ip_base=a.ip_base)
    lay = topo.innet_layout
    ours = our_root_names(topo)
    taken = sorted(ours & root_links())
    if taken:
        raise SystemExit("innet_mininet: %s already exist(s) on this machine (another Mininet network?); "
                         "this run would delete them: stop that network first" % ", ".join(taken))
    result = {"service": lay["service"], "topology": f, "hosts": lay["hosts"], "bridges": lay["bridges"],
              "links": [list(l) for l in lay["links"]], "counters": {}, "loads": [], "exit": {}}
    procs, net = [], None
    old = {s: signal.signal(s, _interrupted) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        net = Mininet(topo=topo, switch=LinuxBridge, controller=None, build=False, autoSetMacs=True, cleanup=False)
        net.build()
        net.start()
        result["started_s"] = time.time() - wall0
        servers = [h for h in start_order(lay) if not h["load"]]
        loads = [h for h in start_order(lay) if h["load"]]
        for h in servers:
            p = Proc(net.get(h["host"]), h, up_command(innet, f, lay, h, a.up_arg, a.duration_s))
            procs.append(p)
            deadline = time.time() + 30
            while not p.listening():
                if p.p.poll() is not None:
                    raise RuntimeError(p.failure("innet up exited early"))
                if time.time() > deadline:
                    raise RuntimeError(p.failure("innet up did not start within 30 s"))
                time.sleep(0.02)
        load0 = time.time()
        running = [Proc(net.get(h["host"]), h, up_command(innet, f, lay, h, a.up_arg, a.duration_s)) for h in loads]
        procs += running
        for p in running:
            try:
                p.p.wait(a.duration_s + 60)
            except subprocess.TimeoutExpired:
                raise RuntimeError(p.failure("load did not finish within %.0f s" % (a.duration_s + 60)))
        result["load_s"] = time.time() - load0
        if not loads:
            time.sleep(a.duration_s)
        # Stop in reverse start order: a chain's control plane before its switches.
        for p in reversed(procs):
            p.stop(10)
        for p in procs:
            result["exit"][p.h["machine"]] = p.p.returncode
            for line in p.out:
                if line.startswith("{"):
                    result["loads"].append(json.loads(line))
                elif " " in line and "." in line.split(" ", 1)[0]:
                    key, value = line.rsplit(" ", 1)
                    node, counter = key.rsplit(".", 1)
                    if value.isdigit():
                        result["counters"].setdefault(node, {})[counter] = int(value)
            if p.p.returncode != 0:
                raise RuntimeError(p.failure("innet up failed"))
    except (Interrupted, KeyboardInterrupt) as e:
        result["error"] = "interrupted (%s)" % (e or "Ctrl-C")
    except Exception as e:  # reported in the result; the finally below still cleans up
        result["error"] = str(e)
    finally:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        for p in procs:
            p.stop(5)
        if net is not None:
            net.stop()  # only this network's hosts, bridges and links; never Mininet's global cleanup
        for s, h in old.items():
            signal.signal(s, h)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    result["left_running"] = [p.h["machine"] for p in procs if p.p.poll() is None]
    result["left_links"] = sorted(ours & root_links())
    result["wall_s"] = time.time() - wall0
    text = json.dumps(result)
    if a.result:
        with open(a.result, "w") as out:
            out.write(text + "\n")
    else:
        print(text)
    return 1 if "error" in result else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    for name, help_ in (("run", "build the network, run every node and a workload, report JSON, tear down"),
                        ("commands", "print Mininet CLI lines (mn --pre) that start every node"),
                        ("layout", "print the hosts, bridges and links as JSON")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("topology", help="an innet topology file (docs/live.md)")
        p.add_argument("--innet", help="the innet binary (default: INNET_BIN, target/release/innet, PATH)")
        p.add_argument("--ip-base", default="10.0.0.0/8", help="host addresses (default 10.0.0.0/8)")
        if name != "layout":
            p.add_argument("--duration-s", type=float, default=10.0, help="seconds of load (default 10)")
            p.add_argument("--up-arg", action="append", default=[],
                           help="an argument for every `innet up` (repeat; e.g. --up-arg=--write-ratio --up-arg=0.5)")
        if name == "run":
            p.add_argument("--result", help="write the JSON result here (default: stdout)")
            p.add_argument("--verbose", action="store_true", help="Mininet's own progress on stderr")
        if name == "commands":
            p.add_argument("--out", help="directory for each host's output (default: a new one under /tmp)")
    a = ap.parse_args(argv)
    if a.what == "layout":
        print(json.dumps(layout(deployment(os.path.abspath(a.topology), find_innet(a.innet)), a.ip_base)))
        return 0
    if a.duration_s <= 0:
        ap.error("--duration-s must be above 0")
    return cmd_commands(a) if a.what == "commands" else cmd_run(a)


if globals().get("__name__") == "__main__":
    sys.exit(main())
