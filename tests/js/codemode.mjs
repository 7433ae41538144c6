#!/usr/bin/env node
// Code Mode flows with the official TypeScript SDK client over Streamable HTTP:
// the model's part is played by this script, which reads each result and
// writes the next piece of code from it.
//
// Plan (JSON on stdin):
//   {"url": "http://127.0.0.1:PORT/mcp", "token": "…", "timeoutMs": 60000,
//    "flow": "prism" | "spec"}
//   - "prism": search for the DNS record list path, then execute code that
//     lists zones, fills the first zone into that path, lists its records,
//     creates one, and catches an error for a path outside the catalogue;
//   - "spec": search only (a large spec: counts, one lookup).
// Report (last stdout line):
//   {"client": "typescript-sdk", "protocolVersion", "tools": [{name, description}],
//    "steps": [{"tool", "code", "result": CallToolResult} | {"tool", "code", "error"}]}
//   or {"fatal": "…"} with exit status 1.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

function emit(report, code) {
  process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(code));
}

/** The value a Code Mode result carries in its first text block. */
function valueOf(result) {
  if (result.isError) throw new Error(`tool error: ${JSON.stringify(result.content)}`);
  return JSON.parse(result.content[0].text);
}

const SEARCH_DNS_LIST = `async () => Object.entries(spec.paths)
  .filter(([path, ops]) => ops.get && path.startsWith("/zones/") && path.endsWith("/dns_records"))
  .map(([path, ops]) => ({ path, summary: ops.get.summary }))`;

const SEARCH_BIG_SPEC = `async () => {
  let operations = 0;
  for (const item of Object.values(spec.paths)) operations += Object.keys(item).length;
  const dns = spec.paths["/zones/{zone_id}/dns_records"];
  return { paths: Object.keys(spec.paths).length, operations,
           dnsListSummary: dns.get.summary,
           split: ["/accounts/{account_id}/rulesets", "/zones/{zone_id}/rulesets"].every(p => p in spec.paths) };
}`;

function executeCode(path) {
  return `async () => {
  const zones = await api.request({ method: "GET", path: "/zones", query: { per_page: 5 } });
  const zone = zones.result[0].id;
  const path = ${JSON.stringify(path)}.replace("{zone_id}", encodeURIComponent(zone));
  const records = await api.request({ method: "GET", path, query: { per_page: 5, type: "A" } });
  const created = await api.request({ method: "POST", path,
    body: { type: "A", name: "www.example.com", content: "192.0.2.1", ttl: 3600, proxied: false } });
  let outside = "";
  try { await api.request({ method: "GET", path: "/zones/" + zone + "/not_an_endpoint" }); } catch (e) { outside = e.message; }
  console.log("zone", zone);
  return { zone, path, zonesStatus: zones.status, recordsStatus: records.status,
           records: Array.isArray(records.result), createdStatus: created.status, outside };
}`;
}

const plan = JSON.parse(await readStdin());
const timeoutMs = plan.timeoutMs ?? 60000;
const report = { client: "typescript-sdk", steps: [] };
const watchdog = setTimeout(() => emit({ ...report, fatal: `timed out after ${timeoutMs} ms` }, 1), timeoutMs);
watchdog.unref();

async function call(client, tool, args) {
  const step = { tool, code: args.code };
  report.steps.push(step);
  try {
    step.result = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: timeoutMs });
  } catch (e) {
    step.error = e instanceof Error ? e.message : String(e);
    throw e;
  }
  return step.result;
}

try {
  const transport = new StreamableHTTPClientTransport(new URL(plan.url), {
    requestInit: { headers: { Authorization: `Bearer ${plan.token}` } },
  });
  const client = new Client({ name: "toolforge-codemode-typescript", version: "1.0.0" });
  await client.connect(transport, { timeout: timeoutMs });
  report.protocolVersion = transport.protocolVersion ?? null;
  const listed = await client.listTools({}, { timeout: timeoutMs });
  report.tools = listed.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
  if (plan.flow === "spec") {
    await call(client, "search", { code: SEARCH_BIG_SPEC });
  } else {
    const found = valueOf(await call(client, "search", { code: SEARCH_DNS_LIST }));
    if (!Array.isArray(found) || found.length === 0) throw new Error(`search found nothing: ${JSON.stringify(found)}`);
    await call(client, "execute", { code: executeCode(found[0].path) });
  }
  await client.close();
  clearTimeout(watchdog);
  emit(report, 0);
} catch (e) {
  clearTimeout(watchdog);
  emit({ ...report, fatal: e instanceof Error ? e.message : String(e) }, 1);
}
