#!/usr/bin/env python2
"""The Gotthard/NOCC authors' store (usi-systems/gotthard, pygotthard/store.py,
Python 2.7, the store NOCC Section 3 describes) at saturation on this machine:
how many requests per second one store process answers, hence its time per
request. innet's NOCC figures take their saturated store's cost from this
(crates/exp/src/calibration.rs, STORE_CALIBRATION; docs/txn.md, "The
saturated store").

    PYENV_VERSION=2.7.18 python2 tools/gotthard-reference/store_capacity.py \
        --reference /path/to/gotthard [--seconds 3] [--window 32]

Three workloads, each alone, `--window` requests in flight from one client
socket, each in-flight slot on a key of its own: `commit` (compare the key's
value, write value + 1: always commits), `abort` (compare against a wrong
value and write: always aborted, the store answers with the correction) and
`read`. Prints one JSON object: requests/s, us per request and the store
process's CPU share (utime + stime over wall time; near 100% means the store,
not this client, was the limit).
"""
import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import time

HDR = struct.Struct('!B I i B B B B')
OP = struct.Struct('!B I 16s')
READ, WRITE, VALUE = 1, 2, 3


def request(cl_id, req_id, ops):
    # flags: type REQ = bit 0 clear; frag 1 of 1, status 0.
    body = ''.join(OP.pack(t, k, v) for (t, k, v) in ops)
    return HDR.pack(0, cl_id, req_id, 1, 1, 0, len(ops)) + body


def value(n):
    return struct.pack('!Q', n).ljust(16, '\0')


def cpu_ticks(pid):
    f = open('/proc/%d/stat' % pid).read()
    rest = f[f.rfind(')') + 2:].split()
    return int(rest[11]) + int(rest[12])


def run(port, kind, seconds, window, pid):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    dest = ('127.0.0.1', port)
    cl_id = {'commit': 1, 'abort': 2, 'read': 3}[kind]
    base = {'commit': 1000, 'abort': 2000, 'read': 3000}[kind]
    vals = [0] * window
    req_id = [0]

    def send(slot):
        req_id[0] += 1
        k = base + slot
        if kind == 'commit':
            ops = [(VALUE, k, value(vals[slot])), (WRITE, k, value(vals[slot] + 1))]
        elif kind == 'abort':
            ops = [(VALUE, k, value(987654321)), (WRITE, k, value(1))]
        else:
            ops = [(READ, k, '\0' * 16)]
        s.sendto(request(cl_id, req_id[0] * 1024 + slot, ops), dest)

    for slot in range(window):
        send(slot)
    done, statuses = 0, {}
    t0, c0 = time.time(), cpu_ticks(pid)
    while time.time() - t0 < seconds:
        data = s.recv(2048)
        _flags, _cl, rid, _fs, _fc, status, n = HDR.unpack(data[:HDR.size])
        statuses[status] = statuses.get(status, 0) + 1
        slot = rid % 1024
        if kind == 'commit' and status == 0:
            vals[slot] += 1
        done += 1
        send(slot)
    wall, cpu = time.time() - t0, (cpu_ticks(pid) - c0) / float(os.sysconf('SC_CLK_TCK'))
    # Drain what is still in flight so the next workload starts clean.
    s.settimeout(0.2)
    try:
        while True:
            s.recv(2048)
    except socket.timeout:
        pass
    return {
        'workload': kind,
        'requests': done,
        'requests_per_s': done / wall,
        'us_per_request': wall / done * 1e6,
        'store_cpu_pct': cpu / wall * 100.0,
        'statuses': dict((str(k), v) for k, v in statuses.items()),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--reference', required=True, help='a checkout of github.com/usi-systems/gotthard')
    p.add_argument('--seconds', type=float, default=3.0)
    p.add_argument('--window', type=int, default=32)
    p.add_argument('--port', type=int, default=23411)
    a = p.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([os.path.join(here, 'stub'), os.path.join(a.reference, 'pygotthard')])
    store = subprocess.Popen([sys.executable, os.path.join(a.reference, 'pygotthard', 'store.py'), '-p', str(a.port)],
                             env=env)
    try:
        time.sleep(1.0)
        out = [run(a.port, k, a.seconds, a.window, store.pid) for k in ('commit', 'abort', 'read')]
    finally:
        store.terminate()
        store.wait()
    print(json.dumps({
        'store': 'usi-systems/gotthard pygotthard/store.py (Python %s)' % sys.version.split()[0],
        'window': a.window,
        'seconds': a.seconds,
        'load_average': open('/proc/loadavg').read().strip(),
        'results': out,
    }, indent=1))


if __name__ == '__main__':
    main()
