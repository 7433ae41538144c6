"""Code Mode flows with the official Python SDK (`mcp.Client`, Streamable HTTP).

The model's part is played by this script: it reads each result and writes the
next piece of code from it (the same flows as ``tests/js/codemode.mjs``).

Plan (JSON on stdin)::

    {"url": "http://127.0.0.1:PORT/mcp", "token": "...", "timeoutSeconds": 60,
     "flow": "prism" | "spec"}

Report (last stdout line)::

    {"client": "python-mcp", "protocolVersion": "...", "tools": [{name, description}],
     "steps": [{"tool", "code", "result": CallToolResult} | {"tool", "code", "error"}]}

or ``{"fatal": "..."}`` with exit status 1.
"""

from __future__ import annotations

import json
import sys
import traceback
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
from driver import describe_error, dump
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

SEARCH_DNS_LIST = """async () => Object.entries(spec.paths)
  .filter(([path, ops]) => ops.get && path.startsWith("/zones/") && path.endsWith("/dns_records"))
  .map(([path, ops]) => ({ path, summary: ops.get.summary }))"""

SEARCH_BIG_SPEC = """async () => {
  let operations = 0;
  for (const item of Object.values(spec.paths)) operations += Object.keys(item).length;
  const dns = spec.paths["/zones/{zone_id}/dns_records"];
  return { paths: Object.keys(spec.paths).length, operations,
           dnsListSummary: dns.get.summary,
           split: ["/accounts/{account_id}/rulesets", "/zones/{zone_id}/rulesets"].every(p => p in spec.paths) };
}"""


def execute_code(path: str) -> str:
    return f"""async () => {{
  const zones = await api.request({{ method: "GET", path: "/zones", query: {{ per_page: 5 }} }});
  const zone = zones.result[0].id;
  const path = {json.dumps(path)}.replace("{{zone_id}}", encodeURIComponent(zone));
  const records = await api.request({{ method: "GET", path, query: {{ per_page: 5, type: "A" }} }});
  const created = await api.request({{ method: "POST", path,
    body: {{ type: "A", name: "www.example.com", content: "192.0.2.1", ttl: 3600, proxied: false }} }});
  let outside = "";
  try {{ await api.request({{ method: "GET", path: "/zones/" + zone + "/not_an_endpoint" }}); }} catch (e) {{ outside = e.message; }}
  console.log("zone", zone);
  return {{ zone, path, zonesStatus: zones.status, recordsStatus: records.status,
           records: Array.isArray(records.result), createdStatus: created.status, outside }};
}}"""


def value_of(result: dict[str, Any]) -> Any:
    if result.get("isError"):
        raise RuntimeError(f"tool error: {json.dumps(result.get('content'))}")
    return json.loads(result["content"][0]["text"])


async def drive(plan: dict[str, Any], report: dict[str, Any]) -> None:
    timeout = float(plan.get("timeoutSeconds", 60))
    async with AsyncExitStack() as stack:
        http_client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {plan['token']}"}, timeout=httpx2.Timeout(timeout)
            )
        )
        client = await stack.enter_async_context(
            Client(
                streamable_http_client(plan["url"], http_client=http_client),
                mode="auto",
                read_timeout_seconds=timeout,
                cache=None,
            )
        )
        report["protocolVersion"] = client.protocol_version
        listed = await client.list_tools()
        report["tools"] = [
            {"name": t.name, "description": t.description, "inputSchema": dump(t)["inputSchema"]}
            for t in listed.tools
        ]

        async def call(tool: str, code: str) -> dict[str, Any]:
            step: dict[str, Any] = {"tool": tool, "code": code}
            report["steps"].append(step)
            try:
                result = dump(await client.call_tool(tool, {"code": code}))
            except Exception as e:
                step["error"] = describe_error(e)
                raise
            step["result"] = result
            return result

        if plan.get("flow") == "spec":
            await call("search", SEARCH_BIG_SPEC)
        else:
            found = value_of(await call("search", SEARCH_DNS_LIST))
            if not isinstance(found, list) or not found:
                raise RuntimeError(f"search found nothing: {found!r}")
            await call("execute", execute_code(found[0]["path"]))


def main() -> int:
    plan = json.loads(sys.stdin.read())
    report: dict[str, Any] = {"client": "python-mcp", "steps": []}
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
