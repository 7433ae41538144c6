#!/usr/bin/env python3
"""Benchmark of the direct-mode MCP server on the full Cloudflare release, side by side
with FastMCP's OpenAPI server on the same spec. Not a test: it measures and reports.

Subcommands (the default is ``run``):

``run``       build nothing; start the loopback upstream, then for each server (toolforge,
              fastmcp) spawn it RUNS times and measure cold start, tools/list and tools/call
              latency (HTTP, keep-alive) and RSS; print a markdown table and write JSON.
``upstream``  the loopback upstream: answers Cloudflare envelopes on any path and records its
              own handling time per request (``GET /__bench/stats`` returns and clears them).
``fastmcp``   FastMCP's OpenAPI server on a spec (run with the venv's python).

Everything is loopback-only, bounded in count and time, and every process started here is
stopped by its pid. The driver uses only the standard library: a raw-socket HTTP/1.1 client
(one keep-alive connection, requests encoded before the clock starts) so that the client adds
as little as possible to what is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import gzip
import hashlib
import json
import os
import platform
import select
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PROTOCOL = "2025-11-25"
CLIENT_TOKEN = "bench-client-token"
UPSTREAM_TOKEN = "bench-upstream-token"
STATS_PATH = "/__bench/stats"
BLOB_PATH = "/__bench/blob/"

# ----------------------------------------------------------------------------------------
# Loopback upstream (asyncio, standard library only)
# ----------------------------------------------------------------------------------------

ZONE = {
    "id": "023e105f4ecef8ad9ca31a8372d0c353",
    "name": "example.com",
    "status": "active",
    "paused": False,
    "type": "full",
    "development_mode": 0,
    "owner": {"id": "023e105f4ecef8ad9ca31a8372d0c353", "name": "owner", "type": "user"},
    "account": {"id": "023e105f4ecef8ad9ca31a8372d0c353", "name": "Example Account"},
    "meta": {
        "cdn_only": False,
        "custom_certificate_quota": 1,
        "dns_only": False,
        "foundation_dns": False,
        "page_rule_quota": 100,
        "phishing_detected": False,
        "step": 2,
    },
    "name_servers": ["bob.ns.cloudflare.com", "lola.ns.cloudflare.com"],
    "original_name_servers": ["ns1.originaldnshost.com", "ns2.originaldnshost.com"],
    "original_registrar": "GoDaddy",
    "original_dnshost": "NameCheap",
    "vanity_name_servers": [],
    "created_on": "2014-01-01T05:20:00.12345Z",
    "modified_on": "2014-01-01T05:20:00.12345Z",
    "activated_on": "2014-01-02T00:01:00.12345Z",
}
ACCOUNT = {"id": "023e105f4ecef8ad9ca31a8372d0c353", "name": "Example Account"}


def envelope(result: Any) -> bytes:
    body = {"success": True, "errors": [], "messages": [], "result": result}
    if isinstance(result, list):
        body["result_info"] = {
            "page": 1,
            "per_page": 20,
            "count": len(result),
            "total_count": len(result),
            "total_pages": 1,
        }
    return json.dumps(body, separators=(",", ":")).encode()


def http_response(status: str, body: bytes, content_type: bytes = b"application/json") -> bytes:
    return (
        b"HTTP/1.1 " + status.encode() + b"\r\ncontent-type: " + content_type
        + b"\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


class Upstream(asyncio.Protocol):
    """HTTP/1.1 keep-alive; every request path gets a canned Cloudflare envelope.

    Handling time runs from the moment the request's bytes are handed to ``data_received``
    to the return of ``transport.write`` of the answer; it is what tools/call overhead
    subtracts from the client's latency.
    """

    durations: list[int] = []
    paths: list[str] = []
    connections = 0
    canned: dict[str, bytes] = {}
    blobs: dict[int, bytes] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        Upstream.connections += 1
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        start = time.perf_counter_ns()
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1")
            lines = head.split("\r\n")
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length:]
            parts = lines[0].split(" ")
            target = parts[1] if len(parts) > 1 else "/"
            if target.startswith(STATS_PATH):
                stats = {"durations_ns": Upstream.durations, "paths": Upstream.paths,
                         "connections": Upstream.connections}
                Upstream.durations, Upstream.paths, Upstream.connections = [], [], 0
                self.transport.write(http_response("200 OK", json.dumps(stats).encode()))
                continue
            if target.startswith(BLOB_PATH):
                size = int(target[len(BLOB_PATH):])
                blob = Upstream.blobs.get(size)
                if blob is None:
                    blob = Upstream.blobs[size] = http_response("200 OK", b"x" * size, b"application/octet-stream")
                self.transport.write(blob)
                continue
            path = target.split("?", 1)[0]
            key = "accounts" if path.rstrip("/").endswith("/accounts") else "zones"
            self.transport.write(http_response("200 OK", Upstream.canned[key]))
            Upstream.durations.append(time.perf_counter_ns() - start)
            Upstream.paths.append(path)
            start = time.perf_counter_ns()


async def upstream_main(max_seconds: float) -> None:
    Upstream.canned = {"zones": envelope([ZONE]), "accounts": envelope([ACCOUNT])}
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Upstream, "127.0.0.1", 0, backlog=128)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), timeout=max_seconds)
    except TimeoutError:
        print("upstream: time limit reached, stopping", file=sys.stderr)
    server.close()


# ----------------------------------------------------------------------------------------
# FastMCP's OpenAPI server (run with the venv's python)
# ----------------------------------------------------------------------------------------


def fastmcp_main(spec_path: str, upstream: str, transport: str) -> None:
    import httpx2  # noqa: PLC0415 - only in the venv
    from fastmcp import FastMCP  # noqa: PLC0415

    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    client = httpx2.AsyncClient(
        base_url=upstream,
        headers={"Authorization": f"Bearer {UPSTREAM_TOKEN}"},
        timeout=30.0,
    )
    mcp = FastMCP.from_openapi(openapi_spec=spec, client=client, name="cloudflare")
    if transport == "stdio":
        asyncio.run(mcp.run_stdio_async(show_banner=False))
        return
    # proto must be IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted connections only when the
    # socket says so (a proto-0 socket leaves Nagle on, and every response stalls ~40 ms on
    # delayed ACKs), which is also what uvicorn gets when it binds the address itself.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    asyncio.run(
        mcp.run_http_async(
            show_banner=False,
            transport="http",
            host="127.0.0.1",
            port=port,
            log_level="warning",
            json_response=True,
            stateless_http=True,
            sockets=[sock],
        )
    )


# ----------------------------------------------------------------------------------------
# Raw HTTP/1.1 client
# ----------------------------------------------------------------------------------------


class HttpError(Exception):
    pass


class Conn:
    """One keep-alive connection; ``request`` returns status, headers, body and timings."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port = host, port
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray(1 << 22)
        self.view = memoryview(self.buf)

    def close(self) -> None:
        self.sock.close()

    def encode(self, method: str, target: str, headers: dict[str, str], body: bytes = b"") -> bytes:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    def _grow(self, need: int) -> None:
        if need > len(self.buf):
            self.view.release()
            self.buf.extend(bytes(max(need, 2 * len(self.buf)) - len(self.buf)))
            self.view = memoryview(self.buf)

    def request(self, raw: bytes) -> tuple[int, dict[str, str], bytes, int, int, int]:
        """Sends ``raw``; returns (status, headers, body, t_sent, t_first_byte, t_done) in ns."""
        sock, perf = self.sock, time.perf_counter_ns
        t0 = perf()
        sock.sendall(raw)
        n = sock.recv_into(self.view)
        t_first = perf()
        if n == 0:
            raise HttpError("connection closed before a response")
        have = n
        head_end = -1
        while head_end < 0:
            head_end = self.buf.find(b"\r\n\r\n", 0, have)
            if head_end < 0:
                self._grow(have + 65536)
                m = sock.recv_into(self.view[have:])
                if m == 0:
                    raise HttpError("connection closed in the headers")
                have += m
        head = bytes(self.buf[:head_end]).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ")[1])
        headers = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        start = head_end + 4
        if "content-length" in headers:
            total = start + int(headers["content-length"])
            self._grow(total)
            while have < total:
                m = sock.recv_into(self.view[have:total])
                if m == 0:
                    raise HttpError("connection closed in the body")
                have += m
            t_done = perf()
            body = bytes(self.buf[start:total])
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            pos, chunks = start, []
            while True:
                line_end = self.buf.find(b"\r\n", pos, have)
                while line_end < 0:
                    self._grow(have + 65536)
                    m = sock.recv_into(self.view[have:])
                    if m == 0:
                        raise HttpError("connection closed in a chunk header")
                    have += m
                    line_end = self.buf.find(b"\r\n", pos, have)
                size = int(bytes(self.buf[pos:line_end]).split(b";")[0], 16)
                need = line_end + 2 + size + 2
                self._grow(need + 65536)
                while have < need:
                    m = sock.recv_into(self.view[have:])
                    if m == 0:
                        raise HttpError("connection closed in a chunk")
                    have += m
                if size == 0:
                    break
                chunks.append((line_end + 2, line_end + 2 + size))
                pos = need
            t_done = perf()
            body = b"".join(bytes(self.buf[a:b]) for a, b in chunks)
        elif status in (202, 204, 304):
            t_done, body = perf(), b""
        else:
            raise HttpError(f"response without length (status {status})")
        return status, headers, body, t0, t_first, t_done


def get_json(host: str, port: int, target: str, timeout: float = 10.0) -> Any:
    c = Conn(host, port, timeout)
    try:
        status, _, body, *_ = c.request(c.encode("GET", target, {}))
    finally:
        c.close()
    if status != 200:
        raise HttpError(f"GET {target}: status {status}")
    return json.loads(body)


# ----------------------------------------------------------------------------------------
# MCP over the raw client
# ----------------------------------------------------------------------------------------


def jsonrpc_body(body: bytes, headers: dict[str, str]) -> Any:
    """A JSON-RPC message from a JSON or SSE response body."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        for line in body.decode().splitlines():
            if line.startswith("data:"):
                data = line[5:].strip()
                if data:
                    return json.loads(data)
        raise HttpError("SSE response without data")
    return json.loads(body)


def warmed_zones_list(mcp: "McpHttp", warmup: int) -> bytes:
    """The encoded `zones_list` call (`per_page` 5) after sending it `warmup`
    times; raises when the last answer is an error."""
    raw = mcp.encode("tools/call", {"name": "zones_list", "arguments": {"per_page": 5}})
    body, headers = b"", {}
    for _ in range(warmup):
        _, headers, body, *_ = mcp.send(raw)
    msg = jsonrpc_body(body, headers) if body else {}
    if "error" in msg or msg.get("result", {}).get("isError"):
        raise RuntimeError(f"zones_list failed: {body[:500]!r}")
    return raw


@contextlib.contextmanager
def loopback_upstream(workdir: Path):
    """This script's loopback upstream for the `with` block, and a tokens file
    mapping CLIENT_TOKEN to UPSTREAM_TOKEN: yields (port, the API base URL,
    the tokens file); the upstream is stopped on leaving."""
    up = Proc([sys.executable, str(Path(__file__).resolve()), "upstream", "--max-seconds", "1800"],
              dict(os.environ), log=workdir / "upstream.log")
    try:
        line, _ = up.wait_line(b"listening on ", 20)
        port = int(line.decode().rsplit(":", 1)[1])
        token_file = workdir / "tokens.json"
        token_file.write_text(json.dumps({"tokens": [
            {"sha256": hashlib.sha256(CLIENT_TOKEN.encode()).hexdigest(), "upstream_token": UPSTREAM_TOKEN}]}))
        yield port, f"http://127.0.0.1:{port}/client/v4", token_file
    finally:
        up.stop()


class McpHttp:
    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        rest = url.split("://", 1)[1]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.rpartition(":")
        self.host, self.port, self.path = host, int(port), "/" + path
        self.conn = Conn(self.host, self.port, timeout)
        self.headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTOCOL,
        }
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.next_id = 1

    def close(self) -> None:
        self.conn.close()

    def encode(self, method: str, params: Any = None, notify: bool = False, query: str = "") -> bytes:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            msg["id"] = self.next_id
            self.next_id += 1
        return self.conn.encode(
            "POST", self.path + query, self.headers, json.dumps(msg, separators=(",", ":")).encode()
        )

    def send(self, raw: bytes) -> tuple[int, dict[str, str], bytes, int, int, int]:
        status, headers, body, t0, t1, t2 = self.conn.request(raw)
        if status >= 300:
            raise HttpError(f"HTTP {status}: {body[:300]!r}")
        sid = headers.get("mcp-session-id")
        if sid and "Mcp-Session-Id" not in self.headers:
            self.headers["Mcp-Session-Id"] = sid
        return status, headers, body, t0, t1, t2

    def initialize(self) -> tuple[Any, int, int]:
        _, h, body, t0, _, t2 = self.send(
            self.encode(
                "initialize",
                {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "toolforge-bench", "version": "1"},
                },
            )
        )
        msg = jsonrpc_body(body, h)
        if "result" not in msg:
            raise HttpError(f"initialize failed: {msg}")
        _, _, _, _, _, t3 = self.send(self.encode("notifications/initialized", notify=True))
        return msg["result"], t0, t3


# ----------------------------------------------------------------------------------------
# Processes
# ----------------------------------------------------------------------------------------


class Proc:
    """A child process with stderr on a large pipe, drained without threads."""

    def __init__(self, argv: list[str], env: dict[str, str], stdio: bool = False, log: Path | None = None):
        self.argv = argv
        self.log = open(log, "ab") if log else None  # noqa: SIM115
        r, w = os.pipe()
        try:
            fcntl.fcntl(r, 1031, 1 << 20)  # F_SETPIPE_SZ: room for many log lines between drains
        except OSError:
            pass
        self.err_r = r
        self.t_spawn = time.perf_counter_ns()
        self.p = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stderr=w,
            close_fds=True,
        )
        os.close(w)
        os.set_blocking(r, False)
        self.err = bytearray()

    @property
    def pid(self) -> int:
        return self.p.pid

    def drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.err_r, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                return
            if self.log:
                self.log.write(chunk)
            self.err += chunk
            if len(self.err) > 1 << 20:
                del self.err[: len(self.err) - (1 << 19)]

    def wait_line(self, prefix: bytes, timeout: float) -> tuple[bytes, int]:
        """Waits for a stderr line starting with ``prefix``; returns it and when it arrived."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            self.drain()
            while True:
                nl = self.err.find(b"\n", seen)
                if nl < 0:
                    break
                line = bytes(self.err[seen:nl])
                seen = nl + 1
                if line.startswith(prefix):
                    return line, time.perf_counter_ns()
            if self.p.poll() is not None:
                raise RuntimeError(
                    f"{self.argv[0]} exited ({self.p.returncode}) before `{prefix.decode()}`:\n"
                    + self.err[-4000:].decode(errors="replace")
                )
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"no `{prefix.decode()}` line within {timeout:.0f} s")
            select.select([self.err_r], [], [], min(left, 1.0))

    def cpu_ns(self) -> int:
        """CPU time of all the process's threads so far (user and kernel, ns), from
        ``/proc/PID/task/*/schedstat``; threads that ended are not counted."""
        total = 0
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        return total

    def cpu_ticks(self) -> tuple[int, int]:
        """User and kernel CPU of the process (every thread, clock ticks) from
        ``/proc/PID/stat``: coarse (10 ms), so only for long loops."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]), int(fields[12])

    def memory(self) -> dict[str, int]:
        out = {}
        with open(f"/proc/{self.pid}/status", encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    out[key] = int(value.split()[0]) * 1024
        return out

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(timeout=10)
        for f in (self.p.stdin, self.p.stdout):
            if f:
                f.close()
        self.drain()
        os.close(self.err_r)
        if self.log:
            self.log.close()


# ----------------------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# ----------------------------------------------------------------------------------------
# One server run
# ----------------------------------------------------------------------------------------


class Server:
    """How to start one implementation, and which tool the call benchmark uses."""

    def __init__(self, name: str, http_argv: list[str], stdio_argv: list[str] | None, env: dict[str, str],
                 token: str | None, call_tool: str, call_args: dict[str, Any], output_query: str | None):
        self.name, self.http_argv, self.stdio_argv, self.env = name, http_argv, stdio_argv, env
        self.token, self.call_tool, self.call_args, self.output_query = token, call_tool, call_args, output_query


def time_requests(proc: Proc, send, raw_for, count: int, max_seconds: float,
                  min_count: int = 5) -> tuple[list[int], list[int], list[int]]:
    """Sends ``count`` requests, or fewer (at least ``min_count``) when ``max_seconds`` run out;
    returns total latencies, times to first byte and body sizes."""
    totals, firsts, sizes = [], [], []
    deadline = time.monotonic() + max_seconds
    for i in range(count):
        raw = raw_for(i)
        _, _, body, t0, t1, t2 = send(raw)
        totals.append(t2 - t0)
        firsts.append(t1 - t0)
        sizes.append(len(body))
        if i % 100 == 99:
            proc.drain()
        if time.monotonic() > deadline and i + 1 >= min_count:
            break
    proc.drain()
    return totals, firsts, sizes


def measure_compressed_listing(proc: "Proc", mcp: "McpHttp", args: argparse.Namespace, out: dict[str, Any]) -> None:
    """tools/list with Accept-Encoding gzip and br: bytes on the wire and p50 (toolforge
    pre-encodes the listing once, in the background at start-up: wait for it, bounded).
    The gzip answer is decoded and compared with the uncompressed listing."""
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, separators=(",", ":")).encode()
    for enc in ("gzip", "br"):
        raw = mcp.conn.encode("POST", mcp.path, {**mcp.headers, "Accept-Encoding": enc}, body)
        deadline = time.monotonic() + 60
        while True:
            _, h, wire, _, _, _ = mcp.send(raw)
            if h.get("content-encoding") == enc or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if h.get("content-encoding") != enc:
            out[f"list_{enc}_bytes"] = None
            continue
        out[f"list_{enc}_bytes"] = len(wire)
        if enc == "gzip":
            tools = json.loads(gzip.decompress(wire))["result"]["tools"]
            if len(tools) != out.get("tools", len(tools)):
                raise RuntimeError(f"gzip listing decodes to {len(tools)} tools")
        totals, _, _ = time_requests(proc, mcp.send, lambda i: raw, args.list_count, args.round_seconds)
        out[f"list_{enc}_p50_us"] = pct(totals, 0.5) / 1e3


def upstream_stats(up_port: int) -> tuple[list[int], list[str]]:
    s = get_json("127.0.0.1", up_port, STATS_PATH)
    return s["durations_ns"], s["paths"]


def run_http(server: Server, args: argparse.Namespace, up_port: int, run_no: int, logdir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    proc = Proc(server.http_argv, server.env, log=logdir / f"{server.name}-http-{run_no}.log")
    try:
        line, t_listen = proc.wait_line(b"listening on ", args.start_timeout)
        url = line.decode().split("listening on ", 1)[1].strip()
        mcp = McpHttp(url, server.token, args.request_timeout)
        try:
            info, _, t_init = mcp.initialize()
            _, h, body, _, _, t_list = mcp.send(mcp.encode("tools/list"))
            out["cold_listening_ms"] = (t_listen - proc.t_spawn) / 1e6
            out["cold_initialize_ms"] = (t_init - t_listen) / 1e6
            out["cold_total_ms"] = (t_list - proc.t_spawn) / 1e6
            listed = jsonrpc_body(body, h)
            tools = listed["result"]["tools"]
            out["server_info"] = info.get("serverInfo", {})
            out["tools"] = len(tools)
            out["list_bytes"] = len(body)
            out["listed_output_schemas"] = sum(1 for t in tools if "outputSchema" in t)
            names = {t["name"] for t in tools}
            if server.call_tool not in names:
                raise RuntimeError(f"{server.name}: tool {server.call_tool} is not listed")
            del listed, tools, names

            # The first call (validator compiled lazily, connection to the upstream opened).
            upstream_stats(up_port)
            call_params = {"name": server.call_tool, "arguments": server.call_args}
            _, h, body, t0, _, t2 = mcp.send(mcp.encode("tools/call", call_params))
            first = jsonrpc_body(body, h)
            result = first.get("result") or {}
            if result.get("isError") or "error" in first:
                raise RuntimeError(f"{server.name}: {server.call_tool} failed: {body[:2000]!r}")
            out["call_has_structured"] = "structuredContent" in result
            out["call_response_bytes"] = len(body)
            durs, _ = upstream_stats(up_port)
            out["first_call_ms"] = (t2 - t0) / 1e6
            out["first_call_upstream_requests"] = len(durs)

            # Warm-up, then tools/list.
            list_raw = mcp.encode("tools/list")
            time_requests(proc, mcp.send, lambda i: list_raw, args.warmup, args.warmup_seconds, 2)
            totals, firsts, sizes = time_requests(proc, mcp.send, lambda i: list_raw, args.list_count, args.round_seconds)
            out["list_n"] = len(totals)
            out["list_p50_us"] = pct(totals, 0.5) / 1e3
            out["list_p90_us"] = pct(totals, 0.9) / 1e3
            out["list_ttfb_p50_us"] = pct(firsts, 0.5) / 1e3
            out["list_floor_p50_us"] = transfer_floor(args, up_port, out["list_bytes"])
            out["list_above_floor_p50_us"] = out["list_p50_us"] - out["list_floor_p50_us"]
            if server.name == "toolforge":
                measure_compressed_listing(proc, mcp, args, out)

            # tools/call against the loopback upstream: overhead = total - upstream handling.
            call_raw = mcp.encode("tools/call", call_params)
            time_requests(proc, mcp.send, lambda i: call_raw, args.warmup, args.warmup_seconds, 2)
            hop = floor_run(args, up_port)
            out["hop_total_p50_us"] = hop["total_p50_us"]
            out["hop_p50_us"] = hop["hop_p50_us"]
            upstream_stats(up_port)
            cpu_before, ticks_before = proc.cpu_ns(), proc.cpu_ticks()
            totals, _, _ = time_requests(proc, mcp.send, lambda i: call_raw, args.call_count, args.round_seconds)
            cpu_after, ticks_after = proc.cpu_ns(), proc.cpu_ticks()
            durs, paths = upstream_stats(up_port)
            if len(durs) != len(totals):
                raise RuntimeError(
                    f"{server.name}: {len(totals)} calls made {len(durs)} upstream requests ({sorted(set(paths))})"
                )
            over = [t - d for t, d in zip(totals, durs, strict=True)]
            out["call_n"] = len(totals)
            # The server's own CPU per call (user + kernel, every thread): what the
            # overhead is when it is not waiting for a CPU or for the other end.
            out["call_server_cpu_us"] = (cpu_after - cpu_before) / len(totals) / 1e3
            # Its split into user and kernel time (10 ms ticks: meaningful with
            # --call-count in the thousands).
            tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
            out["call_server_user_us"] = (ticks_after[0] - ticks_before[0]) * tick_us / len(totals)
            out["call_server_sys_us"] = (ticks_after[1] - ticks_before[1]) * tick_us / len(totals)
            out["call_upstream_path"] = paths[0] if paths else None
            out["call_total_p50_us"] = pct(totals, 0.5) / 1e3
            out["call_upstream_p50_us"] = pct(durs, 0.5) / 1e3
            out["call_overhead_p50_us"] = pct(over, 0.5) / 1e3
            out["call_overhead_p90_us"] = pct(over, 0.9) / 1e3
            out["call_overhead_net_p50_us"] = out["call_overhead_p50_us"] - out["hop_p50_us"]

            mem = proc.memory()
            out["rss_mb"] = mem["VmRSS"] / 1e6
            out["hwm_mb"] = mem["VmHWM"] / 1e6
            out["rss_anon_mb"] = mem.get("RssAnon", 0) / 1e6
            out["rss_file_mb"] = mem.get("RssFile", 0) / 1e6

            # The listing with output schemas (toolforge: ?output_schemas=1; a server that
            # always lists them counts its default listing here too).
            if server.output_query is None and out["listed_output_schemas"]:
                out["list_full_bytes"] = out["list_bytes"]
                out["list_full_output_schemas"] = out["listed_output_schemas"]
                out["list_full_p50_us"] = out["list_p50_us"]
                out["list_full_floor_p50_us"] = out["list_floor_p50_us"]
            if server.output_query is not None:
                full_raw = mcp.encode("tools/list", query=server.output_query)
                _, h, body, _, _, _ = mcp.send(full_raw)
                full = jsonrpc_body(body, h)["result"]["tools"]
                out["list_full_bytes"] = len(body)
                out["list_full_output_schemas"] = sum(1 for t in full if "outputSchema" in t)
                del full
                totals, _, _ = time_requests(proc, mcp.send, lambda i: full_raw, max(5, args.list_count // 4), args.round_seconds)
                out["list_full_p50_us"] = pct(totals, 0.5) / 1e3
                out["list_full_floor_p50_us"] = transfer_floor(args, up_port, out["list_full_bytes"])
                mem = proc.memory()
                out["rss_after_full_mb"] = mem["VmRSS"] / 1e6
                out["hwm_after_full_mb"] = mem["VmHWM"] / 1e6
        finally:
            mcp.close()
    finally:
        proc.stop()
    return out


def run_stdio(server: Server, args: argparse.Namespace, run_no: int, logdir: Path) -> dict[str, Any]:
    assert server.stdio_argv is not None
    proc = Proc(server.stdio_argv, server.env, stdio=True, log=logdir / f"{server.name}-stdio-{run_no}.log")
    try:
        stdin, stdout = proc.p.stdin, proc.p.stdout
        assert stdin is not None and stdout is not None
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "toolforge-bench", "version": "1"}}}
        stdin.write(json.dumps(init).encode() + b"\n")
        stdin.flush()
        deadline = time.monotonic() + args.start_timeout

        fd = stdout.fileno()
        pending = bytearray()

        def read_msg() -> dict[str, Any]:
            """The next JSON-RPC response (big reads; notifications are skipped)."""
            while True:
                nl = pending.find(b"\n")
                if nl >= 0:
                    line = bytes(pending[:nl])
                    del pending[: nl + 1]
                    msg = json.loads(line)
                    if "id" in msg:
                        return msg
                    continue
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{server.name} stdio: no answer in time")
                ready, _, _ = select.select([fd], [], [], 1.0)
                proc.drain()
                if not ready:
                    if proc.p.poll() is not None:
                        raise RuntimeError(f"{server.name} stdio exited: {proc.err[-2000:]!r}")
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"{server.name} stdio closed stdout: {proc.err[-2000:]!r}")
                pending.extend(chunk)

        msg = read_msg()
        t_init = time.perf_counter_ns()
        if "result" not in msg:
            raise RuntimeError(f"{server.name} stdio initialize: {msg}")
        stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                    b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
        stdin.flush()
        msg = read_msg()
        t_list = time.perf_counter_ns()
        return {
            "stdio_initialize_ms": (t_init - proc.t_spawn) / 1e6,
            "stdio_total_ms": (t_list - proc.t_spawn) / 1e6,
            "stdio_tools": len(msg["result"]["tools"]),
        }
    finally:
        proc.stop()


def transfer_floor(args: argparse.Namespace, up_port: int, size: int) -> float:
    """p50 µs for ``size`` bytes from a server that holds them ready (the loopback + client floor)."""
    c = Conn("127.0.0.1", up_port, args.request_timeout)
    try:
        raw = c.encode("GET", f"{BLOB_PATH}{size}", {})
        totals = []
        deadline = time.monotonic() + args.round_seconds
        for i in range(args.list_count + 10):
            _, _, body, t0, _, t2 = c.request(raw)
            if len(body) != size:
                raise HttpError("blob size")
            if i >= 10:
                totals.append(t2 - t0)
            if time.monotonic() > deadline and len(totals) >= 5:
                break
    finally:
        c.close()
    return pct(totals, 0.5) / 1e3


def floor_run(args: argparse.Namespace, up_port: int) -> dict[str, float]:
    """The harness itself: this client straight to the upstream (one loopback HTTP hop)."""
    c = Conn("127.0.0.1", up_port, args.request_timeout)
    try:
        raw = c.encode("GET", "/client/v4/zones?per_page=5", {"Authorization": f"Bearer {UPSTREAM_TOKEN}"})
        for _ in range(args.warmup):
            c.request(raw)
        upstream_stats(up_port)
        totals = []
        for _ in range(args.call_count):
            _, _, _, t0, _, t2 = c.request(raw)
            totals.append(t2 - t0)
        durs, _ = upstream_stats(up_port)
    finally:
        c.close()
    over = [t - d for t, d in zip(totals, durs, strict=True)]
    return {"total_p50_us": pct(totals, 0.5) / 1e3, "upstream_p50_us": pct(durs, 0.5) / 1e3,
            "hop_p50_us": pct(over, 0.5) / 1e3}


# ----------------------------------------------------------------------------------------
# Orchestration and report
# ----------------------------------------------------------------------------------------


SUMMARY_KEYS = [
    "cold_listening_ms", "cold_initialize_ms", "cold_total_ms", "stdio_initialize_ms", "stdio_total_ms",
    "list_p50_us", "list_p90_us", "list_ttfb_p50_us", "list_bytes", "list_full_bytes", "list_full_p50_us",
    "first_call_ms", "call_total_p50_us", "call_upstream_p50_us", "call_overhead_p50_us", "call_overhead_p90_us",
    "hop_total_p50_us", "hop_p50_us", "call_overhead_net_p50_us", "list_floor_p50_us", "list_full_floor_p50_us",
    "list_above_floor_p50_us", "list_gzip_bytes", "list_br_bytes", "list_gzip_p50_us", "list_br_p50_us",
    "rss_mb", "hwm_mb", "rss_anon_mb", "rss_file_mb", "rss_after_full_mb", "hwm_after_full_mb",
]


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    s: dict[str, Any] = {}
    for key in SUMMARY_KEYS:
        vals = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
        if vals:
            s[key] = med(vals)
            s[key + "_range"] = (min(vals), max(vals))
    for key in ("tools", "listed_output_schemas", "list_full_output_schemas", "call_has_structured",
                "call_upstream_path", "server_info", "first_call_upstream_requests", "list_n", "call_n",
                "call_response_bytes"):
        for r in runs:
            if key in r:
                s[key] = r[key]
                break
    s["runs"] = len(runs)
    return s


def fmt(v: Any, unit: str) -> str:
    if not isinstance(v, (int, float)):
        return "n/a"
    if unit == "ms":
        return f"{v:.2f} ms" if v < 100 else f"{v:.0f} ms"
    if unit == "us":
        return f"{v / 1000:.2f} ms" if v >= 10000 else f"{v:.0f} µs"
    if unit == "MB":
        return f"{v:.1f} MB"
    if unit == "B":
        return f"{v / 1e6:.2f} MB" if v >= 1e6 else f"{v / 1e3:.0f} kB"
    return str(v)


def report(results: dict[str, Any]) -> str:
    tf = results["servers"].get("toolforge", {}).get("summary", {})
    fm = results["servers"].get("fastmcp", {}).get("summary", {})
    rows = [
        ("cold start → first tools/list answer (HTTP)", "cold_total_ms", "ms", "< 30 ms", 30.0),
        ("  of which: spawn → listening line", "cold_listening_ms", "ms", "", None),
        ("  of which: listening → initialize + initialized", "cold_initialize_ms", "ms", "", None),
        ("cold start → first tools/list answer (stdio)", "stdio_total_ms", "ms", "", None),
        ("tools/list p50 (HTTP keep-alive, default listing)", "list_p50_us", "us", "< 1 ms", 1000.0),
        ("tools/list p90", "list_p90_us", "us", "", None),
        ("tools/list time to first byte p50", "list_ttfb_p50_us", "us", "", None),
        ("  floor: same byte count from a server holding it ready", "list_floor_p50_us", "us", "", None),
        ("  tools/list p50 above that floor (the server's own share)", "list_above_floor_p50_us", "us", "", None),
        ("tools/call total p50 (`zones_list` / `zones_get`)", "call_total_p50_us", "us", "", None),
        ("  upstream handling p50 (subtracted)", "call_upstream_p50_us", "us", "", None),
        ("tools/call overhead p50 (total − upstream)", "call_overhead_p50_us", "us", "< 200 µs", 200.0),
        ("tools/call overhead p90", "call_overhead_p90_us", "us", "", None),
        ("  harness: this client → upstream directly, total − upstream", "hop_p50_us", "us", "", None),
        ("  overhead less that harness hop", "call_overhead_net_p50_us", "us", "", None),
        ("first tools/call after start", "first_call_ms", "ms", "", None),
        ("RSS after listing + calls (VmRSS)", "rss_mb", "MB", "< 40 MB", 40.0),
        ("peak RSS (VmHWM)", "hwm_mb", "MB", "", None),
        ("  RSS: anonymous (heap)", "rss_anon_mb", "MB", "", None),
        ("  RSS: file-backed (binary, static catalogue)", "rss_file_mb", "MB", "", None),
        ("listing size, default", "list_bytes", "B", "", None),
        ("listing size, with output schemas", "list_full_bytes", "B", "", None),
        ("listing on the wire, gzip (pre-encoded once)", "list_gzip_bytes", "B", "", None),
        ("listing on the wire, brotli (pre-encoded once)", "list_br_bytes", "B", "", None),
        ("tools/list p50, gzip", "list_gzip_p50_us", "us", "", None),
        ("tools/list p50, brotli", "list_br_p50_us", "us", "", None),
        ("tools/list p50 with output schemas", "list_full_p50_us", "us", "", None),
        ("  floor: same byte count from a server holding it ready", "list_full_floor_p50_us", "us", "", None),
        ("RSS after an output-schema listing (VmRSS / VmHWM)", "rss_after_full_mb", "MB", "", None),
    ]
    m = results["machine"]
    lines = [
        f"Machine: {m['cpus']} CPUs, load average {m['loadavg_start'][0]:.1f} at start, "
        f"{m.get('loadavg_end', (float('nan'),))[0]:.1f} at end.",
        f"Full Cloudflare release: toolforge {tf.get('tools', '?')} tools, "
        f"FastMCP {fm.get('tools', '?')} tools; medians over {tf.get('runs', 0)} / {fm.get('runs', 0)} "
        "server processes (each: fresh spawn, p50/p90 over its own requests).",
        "",
        "| measure | target | toolforge | FastMCP | FastMCP ÷ toolforge |",
        "|---|---|---|---|---|",
    ]
    for label, key, unit, target, limit in rows:
        a, b = tf.get(key), fm.get(key)
        if a is None and b is None:
            continue
        ok = ""
        if limit is not None and isinstance(a, (int, float)):
            ok = " ✅" if a < limit else " ❌"
        cell_a = fmt(a, unit)
        if key == "rss_after_full_mb" and isinstance(tf.get("hwm_after_full_mb"), (int, float)):
            cell_a += f" / {fmt(tf['hwm_after_full_mb'], unit)}"
        comparable = not label.lstrip().startswith(("floor", "harness", "upstream"))
        ratio = (f"{b / a:.1f}×" if comparable and isinstance(a, (int, float)) and isinstance(b, (int, float))
                 and a > 0 else "")
        lines.append(f"| {label} | {target} | {cell_a}{ok} | {fmt(b, unit)} | {ratio} |")
    return "\n".join(lines)


def main_run(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    bench = root / "target" / "bench"
    logdir = bench / "logs"
    logdir.mkdir(parents=True, exist_ok=True)
    binary = Path(args.binary).resolve()
    spec = Path(args.spec).resolve()
    # Not resolved: the venv's python is a symlink, and the venv is found through its path.
    venv_python = Path(args.venv_python).absolute() if args.venv_python else None
    script = Path(__file__).resolve()

    up = Proc([sys.executable, str(script), "upstream", "--max-seconds", str(args.max_seconds)],
              dict(os.environ), log=logdir / "upstream.log")
    results: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
                    "loadavg_start": os.getloadavg()},
        "settings": {k: v for k, v in vars(args).items() if k != "func"},
        "servers": {},
    }
    try:
        line, _ = up.wait_line(b"listening on ", 20)
        up_port = int(line.decode().rsplit(":", 1)[1])
        upstream_url = f"http://127.0.0.1:{up_port}/client/v4"
        print(f"upstream: {upstream_url}", file=sys.stderr)

        token_file = bench / "tokens.json"
        token_file.write_text(json.dumps({"tokens": [
            {"sha256": hashlib.sha256(CLIENT_TOKEN.encode()).hexdigest(), "upstream_token": UPSTREAM_TOKEN}]}))
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLFORGE_", "RUST_LOG"))}
        servers: list[Server] = []
        if "toolforge" in args.servers:
            common = ["--upstream", upstream_url, "--allow-loopback-upstream", "--mode", "direct",
                      *args.toolforge_arg]
            servers.append(Server(
                "toolforge",
                [str(binary), "--transport", "http", "--listen", "127.0.0.1:0", "--tokens-file", str(token_file), *common],
                [str(binary), "--transport", "stdio", *common],
                {**base_env, "CLOUDFLARE_API_TOKEN": UPSTREAM_TOKEN},
                CLIENT_TOKEN, "zones_list", {"per_page": 5}, "?output_schemas=1"))
        if "fastmcp" in args.servers:
            if venv_python is None or not venv_python.exists():
                results["servers"]["fastmcp"] = {"error": f"no FastMCP venv python at {venv_python}"}
            else:
                fm = [str(venv_python), str(script), "fastmcp", "--spec", str(spec), "--upstream", upstream_url]
                servers.append(Server(
                    "fastmcp", [*fm, "--transport", "http"], [*fm, "--transport", "stdio"],
                    {**base_env, "FASTMCP_LOG_LEVEL": "WARNING"},
                    None, args.fastmcp_tool, {"per_page": 5}, None))
        for server in servers:
            runs, errors = [], []
            n = args.runs if server.name == "toolforge" else args.fastmcp_runs
            for i in range(n):
                print(f"{server.name}: run {i + 1}/{n}", file=sys.stderr)
                try:
                    r = run_http(server, args, up_port, i, logdir)
                    if server.stdio_argv and not args.no_stdio:
                        r.update(run_stdio(server, args, i, logdir))
                    runs.append(r)
                    brief = {k: round(v, 3) for k, v in r.items()
                             if isinstance(v, float) and k in ("cold_total_ms", "list_p50_us", "call_overhead_p50_us", "rss_mb")}
                    print(f"  {brief}", file=sys.stderr)
                except Exception as e:  # noqa: BLE001 - recorded in the report
                    errors.append(f"run {i + 1}: {type(e).__name__}: {e}")
                    print(f"  failed: {errors[-1][:2000]}", file=sys.stderr)
                    if len(errors) >= 2 and not runs:
                        break
            results["servers"][server.name] = {"runs": runs, "errors": errors, "summary": summarise(runs)}
    finally:
        up.stop()
    results["machine"]["loadavg_end"] = os.getloadavg()
    table = report(results)
    results["table"] = table
    out = Path(args.json_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results, indent=2, default=str)
    out.write_text(text)
    # Keep every run: the same JSON under a timestamped name beside it.
    out.with_name(f"{out.stem}-{time.strftime('%Y%m%d-%H%M%S')}{out.suffix}").write_text(text)
    for name, s in results["servers"].items():
        for e in s.get("errors", []):
            print(f"{name}: {e[:400]}", file=sys.stderr)
    print(table)
    print(f"\n(full results: {out})")
    return 0 if results["servers"].get("toolforge", {}).get("runs") else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    here = Path(__file__).resolve().parent
    root = here.parent.parent
    r = sub.add_parser("run", help="run the benchmark (default)")
    for p in (ap, r):
        p.add_argument("--root", default=str(root))
        p.add_argument("--binary", default=str(root / "target/bench/cf-target/release/cloudflare-mcp"))
        p.add_argument("--spec", default=str(root.parent / "shared/specs/cloudflare/openapi.json"))
        p.add_argument("--venv-python", default=str(root / "target/bench/venv/bin/python"))
        p.add_argument("--servers", default="toolforge,fastmcp")
        p.add_argument("--runs", type=int, default=11, help="toolforge server processes (≥ 5)")
        p.add_argument("--fastmcp-runs", type=int, default=5)
        p.add_argument("--fastmcp-tool", default="zones_get", help="FastMCP's name for GET /zones")
        p.add_argument("--no-stdio", action="store_true", help="skip the stdio cold starts")
        p.add_argument("--toolforge-arg", action="append", default=[],
                       help="extra argument for toolforge's server (repeatable), e.g. --toolforge-arg=--worker-threads=0")
        p.add_argument("--list-count", type=int, default=200)
        p.add_argument("--call-count", type=int, default=500)
        p.add_argument("--warmup", type=int, default=20)
        p.add_argument("--warmup-seconds", type=float, default=5.0, help="bound on one warm-up loop")
        p.add_argument("--round-seconds", type=float, default=30.0, help="bound on one measurement loop")
        p.add_argument("--start-timeout", type=float, default=180.0)
        p.add_argument("--request-timeout", type=float, default=60.0)
        p.add_argument("--max-seconds", type=float, default=3600.0, help="upstream lifetime bound")
        p.add_argument("--json-out", default=str(root / "target/bench/results.json"))
    u = sub.add_parser("upstream")
    u.add_argument("--max-seconds", type=float, default=3600.0)
    f = sub.add_parser("fastmcp")
    f.add_argument("--spec", required=True)
    f.add_argument("--upstream", required=True)
    f.add_argument("--transport", choices=["http", "stdio"], default="http")
    args = ap.parse_args()
    if args.cmd == "upstream":
        asyncio.run(upstream_main(args.max_seconds))
        return 0
    if args.cmd == "fastmcp":
        fastmcp_main(args.spec, args.upstream, args.transport)
        return 0
    return main_run(args)


if __name__ == "__main__":
    sys.exit(main())
