#!/usr/bin/env python3
"""Interleaved A/B of two server builds with ``server_bench.py`` (toolforge only, HTTP).

Not a test: it measures and reports. Each round runs ``server_bench.py run`` once for A and
once for B (the order alternates from round to round, so a load change hits both alike), each
with ``--runs`` fresh server processes. The report gives, per build, the median over all its
processes of each process's ``tools/call`` overhead p50 and p90 (client latency minus the
upstream's own handling, keep-alive), the harness hop, the overhead less that hop, cold start
and RSS, plus the load average at the start and the end.

    python3 tests/bench/call_ab.py --a BASE_BINARY --b NEW_BINARY --spec specs/cloudflare-sample.yaml
    python3 tests/bench/call_ab.py --a BIN --b BIN --b-arg=--worker-threads=0   # one build, two runtimes

Loopback only; server_bench.py bounds every loop and stops every process it starts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

FIGURES = [
    ("call_overhead_p50_us", "tools/call overhead p50 (µs)"),
    ("call_overhead_p90_us", "tools/call overhead p90 (µs)"),
    ("call_total_p50_us", "tools/call total p50 (µs)"),
    ("call_upstream_p50_us", "upstream handling p50 (µs, subtracted)"),
    ("hop_total_p50_us", "floor: the client straight to the upstream, round trip p50 (µs)"),
    ("hop_p50_us", "harness hop p50 (µs)"),
    ("call_overhead_net_p50_us", "overhead less the hop p50 (µs)"),
    ("call_server_cpu_us", "server CPU per call, user + kernel, all threads (µs)"),
    ("call_server_user_us", "  of which user (µs; 10 ms ticks, use --call-count ≥ 3000)"),
    ("call_server_sys_us", "  of which kernel (µs)"),
    ("cold_total_ms", "cold start → first tools/list (ms)"),
    ("rss_mb", "RSS after listing + calls (MB)"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="baseline server binary")
    ap.add_argument("--b", required=True, help="candidate server binary")
    ap.add_argument("--spec", default="specs/cloudflare-sample.yaml")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5, help="server processes per build per round (≥ 5)")
    ap.add_argument("--call-count", type=int, default=500)
    ap.add_argument("--a-arg", action="append", default=[],
                    help="extra server argument for A only (repeatable), e.g. --a-arg=--worker-threads=0")
    ap.add_argument("--b-arg", action="append", default=[], help="extra server argument for B only (repeatable)")
    args = ap.parse_args()
    here = Path(__file__).resolve().parent
    work = Path(tempfile.mkdtemp(prefix="call-ab-"))
    runs: dict[str, list[dict]] = {"a": [], "b": []}
    load = [os.getloadavg()[0]]
    for r in range(args.rounds):
        order = ["a", "b"] if r % 2 == 0 else ["b", "a"]
        for key in order:
            out = work / f"{key}-{r}.json"
            binary = getattr(args, key)
            print(f"round {r + 1}/{args.rounds}: {key} = {binary}", file=sys.stderr)
            subprocess.run(
                [sys.executable, str(here / "server_bench.py"), "run", "--binary", binary, "--spec", args.spec,
                 "--servers", "toolforge", "--runs", str(args.runs), "--no-stdio",
                 "--call-count", str(args.call_count), "--json-out", str(out),
                 *[f"--toolforge-arg={x}" for x in getattr(args, f"{key}_arg")]],
                check=True, stdout=subprocess.DEVNULL, timeout=1800,
            )
            runs[key] += json.loads(out.read_text())["servers"]["toolforge"]["runs"]
    load.append(os.getloadavg()[0])
    print(f"| figure (median of {len(runs['a'])} / {len(runs['b'])} processes) | A | B |")
    print("| --- | ---: | ---: |")
    summary = {}
    for key, label in FIGURES:
        a = statistics.median(x[key] for x in runs["a"])
        b = statistics.median(x[key] for x in runs["b"])
        summary[key] = {"a": a, "b": b}
        print(f"| {label} | {a:.1f} | {b:.1f} |")
    print(f"\nload average (1 min) at start {load[0]:.2f}, at end {load[1]:.2f}; raw runs in {work}")
    (work / "summary.json").write_text(json.dumps({"load": load, "summary": summary, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
