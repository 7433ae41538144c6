#!/usr/bin/env python3
"""`tools/list` of a narrowed session against the shared listing.

Starts each server binary (HTTP, a static client token, an upstream that is
never called), then times `tools/list` at `/mcp` (the shared, pre-encoded
listing) and at a scoped URL (`/mcp/accounts/<id>`: a session whose listing
drops the fixed argument, made per exposure), several rounds, binaries
interleaved. Prints, per binary and path: the body's size and sha256 (equal
bytes across binaries mean the same answer), the first request's time and the
median of the rest.

    python3 tests/bench/narrowed_list.py --binary A --binary B [--rounds 3] [--requests 15] [--encoding br]

A binary is a release build of a generated crate whose profile defines
scoped URLs (docs/benchmarks.md, "Narrowed sessions' `tools/list`").
"""

import argparse
import gzip
import hashlib
import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request

CLIENT_TOKEN = "bench-client-token"


def start(binary, tokens_file):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLFORGE")}
    env["CLOUDFLARE_API_TOKEN"] = "x"
    proc = subprocess.Popen(
        [binary, "--transport", "http", "--listen", "127.0.0.1:0",
         "--tokens-file", tokens_file, "--upstream", "http://127.0.0.1:9/x",
         "--allow-loopback-upstream", "--mode", "direct"],
        stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if b"listening on" in line:
            return proc, line.decode().split("listening on ")[1].strip()
    proc.kill()
    proc.wait()
    raise SystemExit(f"{binary} did not start")


def post(url, path, body, encoding="identity"):
    req = urllib.request.Request(
        url.rsplit("/mcp", 1)[0] + path, data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {CLIENT_TOKEN}",
                 "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream",
                 "MCP-Protocol-Version": "2025-06-18",
                 "Accept-Encoding": encoding})
    with urllib.request.urlopen(req, timeout=60) as resp:
        body = resp.read()
        coding = resp.headers.get("Content-Encoding") or "identity"
    # The decoded body's hash says whether two answers are the same; brotli
    # is not in Python's standard library, so it is hashed as sent.
    decoded = gzip.decompress(body) if coding == "gzip" else body
    return decoded, f"{coding} {len(body)} B"


def measure(binary, tokens_file, paths, requests, encoding):
    proc, url = start(binary, tokens_file)
    try:
        out = {}
        for path in paths:
            post(url, path, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "bench", "version": "1"}}})
            times, body, wire = [], b"", ""
            for _ in range(requests):
                t = time.perf_counter()
                body, wire = post(url, path, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, encoding)
                times.append((time.perf_counter() - t) * 1e3)
            out[path] = (wire, hashlib.sha256(body).hexdigest()[:16], times)
        return out
    finally:
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", action="append", required=True)
    ap.add_argument("--scoped", default="/mcp/accounts/023e105f4ecef8ad9ca31a8372d0c353")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=15)
    ap.add_argument("--encoding", default="identity",
                    help="Accept-Encoding of the requests: identity, gzip or br (the body's size is then the compressed one)")
    args = ap.parse_args()
    paths = ["/mcp", args.scoped]
    with tempfile.TemporaryDirectory() as tmp:
        tokens_file = os.path.join(tmp, "tokens.json")
        digest = hashlib.sha256(CLIENT_TOKEN.encode()).hexdigest()
        with open(tokens_file, "w") as f:
            json.dump({"tokens": [{"sha256": digest, "upstream_token": "up"}]}, f)
        seen = {(b, p): {"first": [], "rest": [], "bodies": set()} for b in args.binary for p in paths}
        for _ in range(args.rounds):
            for binary in args.binary:
                for path, (size, sha, times) in measure(binary, tokens_file, paths, args.requests, args.encoding).items():
                    s = seen[(binary, path)]
                    s["first"].append(times[0])
                    s["rest"].extend(times[1:])
                    s["bodies"].add((size, sha))
    print(f"load average: {os.getloadavg()[0]:.2f}, Accept-Encoding: {args.encoding}")
    for (binary, path), s in seen.items():
        print(f"{binary} {path}: bodies {sorted(s['bodies'])}, first "
              f"{statistics.median(s['first']):.1f} ms, then p50 {statistics.median(s['rest']):.2f} ms")


if __name__ == "__main__":
    main()
