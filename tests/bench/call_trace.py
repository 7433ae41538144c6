#!/usr/bin/env python3
"""Where a ``tools/call`` waits: the server's system calls and thread hand-offs per call.

Not a test: it measures and reports. For each ``--binary`` (a server built from the
generated sample crate, e.g. ``cloudflare-mcp``) it starts the server in front of the
loopback upstream of ``server_bench.py``, initialises over HTTP, warms up, then attaches
``strace -f`` to the server for exactly ``--calls`` keep-alive ``tools/call`` requests of
``zones_list`` and stops it (by its pid). It prints the system calls per call, by name
and by thread (``-c`` summary, every thread of the server), so a futex wake-up between
threads, a second ``write`` for one response or an extra ``epoll_wait`` shows up as a
count that does not depend on the machine's load. ``--timeline N`` also prints the last
N calls' system calls with thread ids and microsecond timestamps (``strace -tt -T``), to
see which thread did what between the request's ``recvfrom`` and the response's write.

    python3 tests/bench/call_trace.py --binary A --binary B --calls 200
    python3 tests/bench/call_trace.py --binary B --calls 50 --timeline 2

Loopback only, bounded in count and time; every process started here is stopped by its pid.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import server_bench as sb  # noqa: E402

# "12345 12:00:00.123456 write(5, ...) = 10 <0.000012>" or "[pid 12345] ..."
LINE = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\d+:\d+:\d+\.\d+)\s+(\w+)\(")
RESUMED = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\d+:\d+:\d+\.\d+)\s+<\.\.\. (\w+) resumed>")


def thread_names(pid: int) -> dict[int, str]:
    names = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            names[int(task.name)] = (task / "comm").read_text().strip()
        except OSError:
            continue
    return names


def measure(binary: Path, upstream_url: str, token_file: Path, args: argparse.Namespace, workdir: Path,
            label: str) -> dict:
    argv = [str(binary), "--transport", "http", "--listen", "127.0.0.1:0", "--tokens-file", str(token_file),
            "--upstream", upstream_url, "--allow-loopback-upstream", "--mode", "direct", *args.server_arg]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLFORGE_", "RUST_LOG"))}
    env["CLOUDFLARE_API_TOKEN"] = sb.UPSTREAM_TOKEN
    proc = sb.Proc(argv, env, log=workdir / f"{label}.log")
    trace = workdir / f"strace.{label}.txt"
    try:
        line, _ = proc.wait_line(b"listening on ", 60)
        url = line.decode().split("listening on ", 1)[1].strip()
        mcp = sb.McpHttp(url, sb.CLIENT_TOKEN, 60)
        try:
            mcp.initialize()
            raw = sb.warmed_zones_list(mcp, args.warmup)
            names = thread_names(proc.pid)
            st = subprocess.Popen(["strace", "-f", "-tt", "-T", "-qq", "-o", str(trace), "-p", str(proc.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            # strace prints nothing when attached with -qq: wait until it
            # traces, by making calls until the trace file shows one.
            deadline = time.monotonic() + 20
            while (not trace.exists() or trace.stat().st_size == 0) and time.monotonic() < deadline:
                mcp.send(raw)
                time.sleep(0.05)
            size_before = trace.stat().st_size
            time.sleep(0.2)
            for i in range(args.calls):
                mcp.send(raw)
                if i % 100 == 99:
                    proc.drain()
            time.sleep(0.2)
            st.send_signal(signal.SIGINT)
            st.wait(timeout=30)
        finally:
            mcp.close()
    finally:
        proc.stop()
    text = trace.read_bytes()[size_before:].decode(errors="replace")
    per_name: collections.Counter[str] = collections.Counter()
    per_thread: collections.Counter[tuple[str, str]] = collections.Counter()
    lines = []
    for row in text.splitlines():
        m = LINE.match(row) or RESUMED.match(row)
        if not m:
            continue
        if "resumed>" in row:
            continue  # counted at its start
        tid, _, name = int(m.group(1)), m.group(2), m.group(3)
        per_name[name] += 1
        per_thread[(names.get(tid, str(tid)), name)] += 1
        lines.append(row)
    calls = args.calls
    result = {
        "binary": str(binary),
        "calls": calls,
        "syscalls_per_call": sum(per_name.values()) / calls,
        "by_name": {k: v / calls for k, v in per_name.most_common()},
        "by_thread": {f"{t}/{n}": v / calls for (t, n), v in per_thread.most_common()},
        "trace_file": str(trace),
    }
    if args.timeline:
        # The last calls: from the N-th last accept of a request (recvfrom/read on the
        # client's socket is not distinguishable by name alone, so print a tail).
        result["timeline"] = lines[-args.timeline * max(1, int(result["syscalls_per_call"] + 0.5)):]
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", action="append", required=True, help="server binary (repeatable)")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--timeline", type=int, default=0, help="print the system calls of the last N calls")
    ap.add_argument("--server-arg", action="append", default=[], help="extra server argument (repeatable)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    args.calls = max(1, min(args.calls, 20_000))
    workdir = Path(tempfile.mkdtemp(prefix="call-trace-"))
    results = []
    with sb.loopback_upstream(workdir) as (_, upstream_url, token_file):
        for i, binary in enumerate(args.binary):
            r = measure(Path(binary).resolve(), upstream_url, token_file, args, workdir, f"b{i}")
            results.append(r)
            print(f"{binary} {' '.join(args.server_arg)}: {r['syscalls_per_call']:.2f} system calls per tools/call "
                  f"({args.calls} calls)")
            for k, v in r["by_thread"].items():
                print(f"  {v:6.2f}  {k}")
            for row in r.get("timeline", []):
                print("   ", row)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    print(f"(traces in {workdir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
