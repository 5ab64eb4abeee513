#!/usr/bin/env python3
"""Runs the Gotthard authors' own tests (usi-systems/gotthard, pygotthard/:
test/test_basic.py, test_early_abort.py, test_read_cache.py,
test_opti_abort.py and load_generator.py; Python 2) against innet's
`innet store` and `innet switch txn`, or against the reference's own
store.py and software_switch.py, one fresh store (and switch) per run.
See README.md.

    tools/gotthard-reference/run.py --reference PATH [--target innet|reference] [--only NAME]
"""

import argparse
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# (name, script and its arguments after HOST PORT, switch mode or None for
# the store alone, client-switch and switch-store one-way delays in s, times
# the script runs against the same store and switch).
# The delays are the ones the reference names: pygotthard/README.md
# (-d 0.001 -D 0.01), test_read_cache.py (-d 0.001 -D 0.005),
# test_opti_abort.py (-d 0.01 -D 0.5).
LOAD = ["load_generator.py", "-n", "2", "-c", "100", "-T", "A(x,x)W(x,x+1)|R(x)", "-p", "0.1"]
RUNS = [
    ("basic/store", ["test/test_basic.py"], None, 0, 0, 1),
    ("basic/forward", ["test/test_basic.py"], "forward", 0.001, 0.01, 1),
    ("basic/read-cache", ["test/test_basic.py"], "read_cache", 0.001, 0.01, 1),
    ("basic/early-abort", ["test/test_basic.py"], "early_abort", 0.001, 0.01, 1),
    ("basic/optimistic-abort", ["test/test_basic.py"], "optimistic_abort", 0.001, 0.01, 1),
    ("early-abort/early-abort", ["test/test_early_abort.py"], "early_abort", 0.001, 0.01, 1),
    ("read-cache/read-cache", ["test/test_read_cache.py"], "read_cache", 0.001, 0.005, 1),
    ("opti-abort/optimistic-abort", ["test/test_opti_abort.py"], "optimistic_abort", 0.01, 0.5, 1),
    # pygotthard/README.md's workload: two clients increment x (10%) or read it.
    ("load/store", LOAD, None, 0, 0, 1),
    ("load/early-abort", LOAD, "early_abort", 0.001, 0.01, 1),
    ("load/optimistic-abort", LOAD, "optimistic_abort", 0.001, 0.01, 1),
    # The same workload run twice against one store with fixed client ids
    # (`--id 1`), as a second experiment against a running store would.
    ("load-twice-same-ids/store", LOAD + ["--id", "1"], None, 0, 0, 2),
]

# Runs whose failure is explained (docs/txn.md, "The reference
# implementation's tests"): target -> name -> why.
EXPECTED_FAILURES = {
    "reference": {
        "basic/optimistic-abort": "test_basic.py line 81 expects ABORT; an optimistic-abort switch answers "
        "OPTIMISTIC_ABORT (a compare against a key a write passed it for)",
        "opti-abort/optimistic-abort": "the Python switch hands each request to one of 128 threads that sleeps "
        "the client delay first, so T1 and T2 race (5 of 5 runs failed here, at line 38 or 91)",
    },
    "innet": {
        "basic/optimistic-abort": "as the reference's own switch: OPTIMISTIC_ABORT where test_basic.py line 81 "
        "expects ABORT",
        "load-twice-same-ids/store": "exactly-once per (client id, request id): the second process's request ids "
        "restart at 1 under the same client ids and are answered BADREQ (docs/txn.md, 'How a client starts afresh')",
    },
}


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd, env=None, cwd=None):
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd, text=True)


def stop(p):
    p.terminate()
    try:
        out, _ = p.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    return out


def servers(args, mode, d_client, d_store):
    """Starts the store (and switch); returns (processes, address the test talks to)."""
    store_port = free_port()
    procs = []
    if args.target == "innet":
        procs.append(start([args.innet, "store", "--listen", f"127.0.0.1:{store_port}", "--allow-reset"]))
    else:
        env = dict(os.environ, PYTHONPATH=args.stub)  # store.py imports psutil for CPU_PCT only
        procs.append(start([args.python2, "store.py", "-p", str(store_port)], env=env, cwd=args.pygotthard))
    port = store_port
    if mode:
        port = free_port()
        if args.target == "innet":
            procs.append(start([args.innet, "switch", "txn", "--mode", mode.replace("_", "-"),
                                "--listen", f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{store_port}",
                                "--client-delay-ms", str(d_client * 1000), "--store-delay-ms", str(d_store * 1000)]))
        else:
            procs.append(start([args.python2, "software_switch.py", "-p", str(port), "-d", str(d_client),
                                "-D", str(d_store), "-m", mode, "127.0.0.1", str(store_port)], cwd=args.pygotthard))
    time.sleep(1.0)
    return procs, port


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", required=True, help="a checkout of github.com/usi-systems/gotthard")
    ap.add_argument("--target", choices=["innet", "reference"], default="innet")
    ap.add_argument("--innet", default=os.path.join(ROOT, "target", "release", "innet"))
    ap.add_argument("--python2", default=os.environ.get("PYTHON2", "python2"))
    ap.add_argument("--only", help="run only the runs whose name contains this")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    args.pygotthard = os.path.join(os.path.abspath(args.reference), "pygotthard")
    if not os.path.isfile(os.path.join(args.pygotthard, "gotthard.py")):
        sys.exit(f"{args.pygotthard}/gotthard.py missing: give a checkout of github.com/usi-systems/gotthard")
    if args.target == "innet" and not os.access(args.innet, os.X_OK):
        sys.exit(f"{args.innet} missing: cargo build --release -p innet (or --innet PATH)")
    if subprocess.run([args.python2, "-c", "import thread"], capture_output=True).returncode != 0:
        sys.exit(f"{args.python2} is not Python 2 (--python2 PATH, or PYENV_VERSION=2.7.18)")
    # store.py imports psutil; a stub answers CPU_PCT with 0 where psutil is missing.
    args.stub = os.path.join(HERE, "stub")

    failed = 0
    for name, script, mode, d_client, d_store, times in RUNS:
        if args.only and args.only not in name:
            continue
        procs, port = servers(args, mode, d_client, d_store)
        # The tests import `pygotthard` (its __init__ imports gotthard.py).
        env = dict(os.environ, PYTHONPATH=os.path.abspath(args.reference))
        t0 = time.time()
        ok, out = True, ""
        for _ in range(times):
            try:
                r = subprocess.run([args.python2] + [script[0], "127.0.0.1", str(port)] + script[1:],
                                   cwd=args.pygotthard, env=env, capture_output=True, text=True,
                                   timeout=args.timeout)
                # load_generator.py's client threads fail by an exception, not its status.
                ok = r.returncode == 0 and "Traceback" not in r.stderr
                out += r.stdout + r.stderr
            except subprocess.TimeoutExpired as e:
                ok, out = False, out + f"timed out after {args.timeout} s\n{e.stdout or ''}{e.stderr or ''}"
            if not ok:
                break
        logs = [stop(p) for p in procs]
        why = EXPECTED_FAILURES[args.target].get(name)
        verdict = ("PASS" if ok else "FAIL") if why is None else ("XFAIL" if not ok else "XPASS")
        failed += verdict == "FAIL"
        print(f"{verdict} {name} ({time.time() - t0:.1f} s){': ' + why if why and not ok else ''}", flush=True)
        if verdict == "FAIL" or os.environ.get("VERBOSE"):
            print("  " + out.strip().replace("\n", "\n  "))
            for log in logs:
                if log and log.strip():
                    print("  | " + log.strip()[-2000:].replace("\n", "\n  | "))
    print(f"{failed} unexpected")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
