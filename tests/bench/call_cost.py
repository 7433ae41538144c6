#!/usr/bin/env python3
"""What one ``tools/call`` costs the server, in instructions: a load-independent figure.

Not a test: it measures and reports. For each ``--binary`` (a server built from the
generated sample crate, e.g. ``cloudflare-mcp``) it starts the server under
``valgrind --tool=callgrind`` with instrumentation off, initialises over HTTP, warms up,
turns instrumentation on (``callgrind_control -i on``) for exactly ``--calls`` keep-alive
``tools/call`` requests of ``zones_list`` against the loopback upstream of
``server_bench.py``, turns it off, and stops the server. The instructions counted (``Ir``)
divided by the calls is the server's cost per call: its user-space work only (the kernel's
loopback path and the client are not in it). ``--top N`` also prints the N functions with
the largest inclusive cost per call (``callgrind_annotate --inclusive=yes``), which splits
the call into HTTP parsing, middleware, JSON-RPC, the handler, the upstream client and
encoding.

    python3 tests/bench/call_cost.py --binary A --binary B --calls 300 --top 40

Loopback only, bounded in count and time; every process started here is stopped by its pid.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import server_bench as sb  # noqa: E402


def callgrind_control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True, timeout=60)


def total_ir(out_file: Path) -> int:
    # "summary:" counts from the start (0 with instrumentation off then);
    # "totals:" is what the instrumented stretch cost.
    totals = [int(line.split()[1]) for line in out_file.read_text(errors="replace").splitlines()
              if line.startswith(("summary:", "totals:"))]
    if not totals:
        raise RuntimeError(f"no totals in {out_file}")
    return max(totals)


def top_functions(out_file: Path, calls: int, n: int) -> list[tuple[float, str]]:
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", f"--threshold=100", str(out_file)],
        check=True, capture_output=True, text=True, timeout=300,
    ).stdout
    rows = []
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.*)$", line)
        if m:
            ir = int(m.group(1).replace(",", ""))
            rows.append((ir / calls, m.group(2).strip()))
    return rows[:n]


def measure(binary: Path, upstream_url: str, token_file: Path, args: argparse.Namespace, workdir: Path,
            label: str) -> dict:
    out_file = workdir / f"callgrind.{label}.out"
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_file}",
            str(binary), "--transport", "http", "--listen", "127.0.0.1:0", "--tokens-file", str(token_file),
            "--upstream", upstream_url, "--allow-loopback-upstream", "--mode", "direct", *args.server_arg]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLFORGE_", "RUST_LOG"))}
    env["CLOUDFLARE_API_TOKEN"] = sb.UPSTREAM_TOKEN
    proc = sb.Proc(argv, env, log=workdir / f"{label}.log")
    try:
        line, _ = proc.wait_line(b"listening on ", 300)
        url = line.decode().split("listening on ", 1)[1].strip()
        mcp = sb.McpHttp(url, sb.CLIENT_TOKEN, 120)
        try:
            mcp.initialize()
            raw = sb.warmed_zones_list(mcp, args.warmup)
            sb.get_json("127.0.0.1", args.upstream_port, sb.STATS_PATH)
            callgrind_control("-i", "on", str(proc.pid))
            for i in range(args.calls):
                mcp.send(raw)
                if i % 100 == 99:
                    proc.drain()
            callgrind_control("-i", "off", str(proc.pid))
            # The stats request itself opens one connection.
            stats = sb.get_json("127.0.0.1", args.upstream_port, sb.STATS_PATH)
            reused = stats["connections"] - 1 == 0 and len(stats["durations_ns"]) == args.calls
            mem = proc.memory()
        finally:
            mcp.close()
    finally:
        proc.stop()
    # valgrind writes the file as the process exits
    deadline = time.monotonic() + 60
    while not out_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    ir = total_ir(out_file)
    result = {"binary": str(binary), "calls": args.calls, "ir_total": ir, "ir_per_call": ir / args.calls,
              "upstream_connection_reused": reused,
              "rss_mb_under_valgrind": mem["VmRSS"] / 1e6}
    if args.top:
        result["top"] = top_functions(out_file, args.calls, args.top)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", action="append", required=True, help="server binary (repeatable)")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--top", type=int, default=0, help="print the N costliest functions (inclusive, per call)")
    ap.add_argument("--server-arg", action="append", default=[], help="extra server argument (repeatable)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="call-cost-"))
    results = []
    with sb.loopback_upstream(workdir) as (port, upstream_url, token_file):
        args.upstream_port = port
        for i, binary in enumerate(args.binary):
            r = measure(Path(binary).resolve(), upstream_url, token_file, args, workdir, f"b{i}")
            results.append(r)
            print(f"{binary}: {r['ir_per_call']:,.0f} instructions per tools/call ({args.calls} calls; "
                  f"one upstream request each over the kept-alive connection: {r['upstream_connection_reused']})")
            for cost, name in r.get("top", []):
                print(f"  {cost:>12,.0f}  {name[:160]}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    print(f"(callgrind files in {workdir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
