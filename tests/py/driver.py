"""Drives an MCP server with the official Python SDK (`mcp`) and prints one JSON report.

Two clients, two transports:

- ``"client": "client"``: the high-level ``mcp.Client`` in ``mode="auto"``: it probes
  ``server/discover`` and speaks 2026-07-28 when the server answers (else falls back
  to the initialize handshake; the report's ``protocolVersion`` tells which).
- ``"client": "session"``: the low-level ``ClientSession`` with the 2025-11-25
  ``initialize`` handshake.
- ``"transport": "http"``: Streamable HTTP at ``url`` with ``Authorization: Bearer <token>``.
- ``"transport": "stdio"``: launches ``command`` with ``args`` and ``env``.

Plan (JSON on stdin)::

    {"client": "client"|"session", "transport": "http"|"stdio",
     "url": "...", "token": "...", "command": "...", "args": [...], "env": {...},
     "timeoutSeconds": 60, "clientName": "gemini-cli",
     "steps": [{"op": "list"}, {"op": "call", "name": "zones_list", "arguments": {}},
               {"op": "skills"}, {"op": "request", "method": "skills/get", "params": {...}}]}

``clientName`` is the ``clientInfo.name`` the client announces (at ``initialize``, and
in every request's ``_meta`` on 2026-07-28); the SDK's default otherwise.

``follow`` calls ``name`` with ``arguments``, then again with the result's
``structuredContent.next`` while that is an object (at most ``maxCalls`` calls), as
an agent paging through a list does; it reports every call.

``skills`` walks the Skills extension (SEP-2640) as a host would: ``resources/list``
(typed), ``skills/list``, ``skills/get`` of each listed skill, ``resources/read``
(typed) of every file in each manifest and of ``api://products``. The SDK has no
skills methods, so those go out as raw requests through the same session
(``request`` sends any method the same way).

Report (last stdout line)::

    {"client": "...", "protocolVersion": "...", "serverInfo": {...},
     "results": [{"op": "list", "tools": [...]},
                 {"op": "call", "name": "...", "result": {...}} | {"op": ..., "error": {...}}]}

or ``{"fatal": "..."}`` with exit status 1. Both clients validate ``structuredContent``
against a listed tool's ``outputSchema``; a mismatch shows up as an error result.
A stdio server's stderr goes to this script's stderr.
"""

from __future__ import annotations

import json
import sys
import traceback
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def describe_error(e: BaseException) -> dict[str, Any]:
    if isinstance(e, MCPError):
        out: dict[str, Any] = {"code": e.code, "message": e.message}
        if e.data is not None:
            out["data"] = e.data
        return out
    if isinstance(e, BaseExceptionGroup):
        return {"message": "; ".join(describe_error(x)["message"] for x in e.exceptions)}
    return {"message": f"{type(e).__name__}: {e}"}


async def run_steps(api: Any, steps: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    """`api` has `list_tools(cursor)` and `call_tool(name, arguments)` (Client or ClientSession)."""
    for step in steps:
        op = step.get("op")
        if op == "list":
            try:
                tools: list[Any] = []
                cursor = None
                for _ in range(100):
                    listed = await api.list_tools(cursor)
                    tools.extend(dump(t) for t in listed.tools)
                    cursor = listed.next_cursor
                    if not cursor:
                        break
                results.append({"op": "list", "tools": tools})
            except Exception as e:  # noqa: BLE001 - the report carries every failure
                results.append({"op": "list", "error": describe_error(e)})
        elif op == "call":
            name = step["name"]
            try:
                result = await api.call_tool(name, step.get("arguments") or {})
                results.append({"op": "call", "name": name, "result": dump(result)})
            except Exception as e:  # noqa: BLE001
                results.append({"op": "call", "name": name, "error": describe_error(e)})
        elif op == "follow":
            name = step["name"]
            arguments = step.get("arguments") or {}
            calls: list[Any] = []
            try:
                for _ in range(int(step.get("maxCalls", 20))):
                    result = dump(await api.call_tool(name, arguments))
                    calls.append({"arguments": arguments, "result": result})
                    following = (result.get("structuredContent") or {}).get("next")
                    if not isinstance(following, dict):
                        break
                    arguments = following
                results.append({"op": "follow", "name": name, "calls": calls})
            except Exception as e:  # noqa: BLE001
                results.append({"op": "follow", "name": name, "calls": calls, "error": describe_error(e)})
        elif op == "skills":
            try:
                results.append({"op": "skills", **(await walk_skills(api))})
            except Exception as e:  # noqa: BLE001
                results.append({"op": "skills", "error": describe_error(e)})
        elif op == "request":
            try:
                result = await api.request(step["method"], step.get("params"))
                results.append({"op": "request", "method": step["method"], "result": result})
            except Exception as e:  # noqa: BLE001
                results.append({"op": "request", "method": step["method"], "error": describe_error(e)})
        else:
            results.append({"op": op, "error": {"message": f"unknown op {op!r}"}})


async def walk_skills(api: Any) -> dict[str, Any]:
    resources: list[Any] = []
    cursor = None
    for _ in range(100):
        listed = await api.list_resources(cursor)
        resources.extend(dump(r) for r in listed.resources)
        cursor = listed.next_cursor
        if not cursor:
            break
    listing = await api.request("skills/list", {})
    gets = [await api.request("skills/get", {"uri": s["uri"]}) for s in listing.get("skills", [])]
    reads: list[Any] = []
    uris = [f["uri"] for g in gets for f in g["skill"]["resources"]] + ["api://products"]
    for uri in uris:
        read = await api.read_resource(uri)
        reads.append({"uri": uri, "contents": [dump(c) for c in read.contents]})
    return {"resources": resources, "list": listing, "gets": gets, "reads": reads}


async def raw_request(session: ClientSession, method: str, params: dict[str, Any] | None) -> Any:
    from mcp_types import Request
    from pydantic import TypeAdapter

    request = Request[dict[str, Any] | None, str](method=method, params=params)
    return await session.send_request(request, TypeAdapter(dict[str, Any]))


class ClientApi:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def list_tools(self, cursor: str | None) -> Any:
        return await self.client.list_tools(cursor=cursor)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.client.call_tool(name, arguments)

    async def list_resources(self, cursor: str | None) -> Any:
        return await self.client.list_resources(cursor=cursor)

    async def read_resource(self, uri: str) -> Any:
        return await self.client.read_resource(uri)

    async def request(self, method: str, params: dict[str, Any] | None) -> Any:
        return await raw_request(self.client.session, method, params)


class SessionApi:
    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def list_tools(self, cursor: str | None) -> Any:
        from mcp_types import PaginatedRequestParams

        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        return await self.session.list_tools(params=params)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.session.call_tool(name, arguments)

    async def list_resources(self, cursor: str | None) -> Any:
        from mcp_types import PaginatedRequestParams

        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        return await self.session.list_resources(params=params)

    async def read_resource(self, uri: str) -> Any:
        return await self.session.read_resource(uri)

    async def request(self, method: str, params: dict[str, Any] | None) -> Any:
        return await raw_request(self.session, method, params)


def stdio_params(plan: dict[str, Any]) -> StdioServerParameters:
    return StdioServerParameters(
        command=plan["command"], args=list(plan.get("args", [])), env=dict(plan.get("env", {}))
    )


async def drive(plan: dict[str, Any], report: dict[str, Any]) -> None:
    kind = plan.get("client", "client")
    transport = plan.get("transport", "http")
    steps = plan.get("steps", [])
    timeout = float(plan.get("timeoutSeconds", 60))
    name = plan.get("clientName")
    client_info = Implementation(name=name, version="1.0.0") if name else None
    async with AsyncExitStack() as stack:
        http_client = None
        if transport == "http":
            headers = {"Authorization": f"Bearer {plan['token']}"} if plan.get("token") else {}
            http_client = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout))
            )
        if kind == "client":
            if transport == "http":
                target: Any = streamable_http_client(plan["url"], http_client=http_client)
            else:
                target = stdio_params(plan)
            client = await stack.enter_async_context(
                Client(
                    target,
                    mode="auto",
                    read_timeout_seconds=timeout,
                    cache=None,
                    client_info=client_info,
                )
            )
            report["protocolVersion"] = client.protocol_version
            info = client.server_info
            report["serverInfo"] = dump(info) if info is not None else None
            await run_steps(ClientApi(client), steps, report["results"])
        elif kind == "session":
            if transport == "http":
                read, write = await stack.enter_async_context(
                    streamable_http_client(plan["url"], http_client=http_client)
                )
            else:
                read, write = await stack.enter_async_context(stdio_client(stdio_params(plan)))
            session = await stack.enter_async_context(
                ClientSession(read, write, read_timeout_seconds=timeout, client_info=client_info)
            )
            init = await session.initialize()
            report["protocolVersion"] = init.protocol_version
            report["serverInfo"] = dump(init.server_info) if init.server_info is not None else None
            await run_steps(SessionApi(session), steps, report["results"])
        else:
            raise ValueError(f"unknown client kind {kind!r}")


def main() -> int:
    plan = json.loads(sys.stdin.read())
    report: dict[str, Any] = {
        "client": f"python-mcp-{plan.get('client', 'client')}-{plan.get('transport', 'http')}",
        "results": [],
    }
    limit = float(plan.get("timeoutSeconds", 60)) * 2 + 10
    status = 0
    try:

        async def bounded() -> None:
            with anyio.fail_after(limit):
                await drive(plan, report)

        anyio.run(bounded)
    except BaseException as e:  # noqa: BLE001 - reported, not raised
        traceback.print_exc(file=sys.stderr)
        report["fatal"] = describe_error(e)["message"]
        status = 1
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
