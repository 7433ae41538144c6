#!/usr/bin/env node
// Drives an MCP server over Streamable HTTP with the official TypeScript SDK
// client (`@modelcontextprotocol/sdk`: Client + StreamableHTTPClientTransport,
// the 2025-11-25 initialize handshake) and prints one JSON report.
//
// Plan (JSON on stdin):
//   {"url": "http://127.0.0.1:PORT/mcp?output_schemas=1", "token": "…",
//    "timeoutMs": 60000, "clientName": "claude-code", "userAgent": "claude-code/2.0",
//    "steps": [{"op": "list"}, {"op": "call", "name": "zones_list", "arguments": {}},
//              {"op": "skills"}, {"op": "request", "method": "skills/get", "params": {…}}]}
// `skills` walks the Skills extension (SEP-2640) as a host would: listResources,
// skills/list, skills/get of each skill, readResource of every manifest file
// and of api://products. The SDK has no skills methods: those are sent with
// client.request and the SDK's loose ResultSchema (`request` sends any method).
// `clientName` is the `clientInfo.name` announced at initialize (default
// `toolforge-e2e-typescript`), `userAgent` the User-Agent of every request
// (what a stateless server sees; Node's own otherwise).
// Report (last stdout line):
//   {"client": "typescript-sdk", "protocolVersion", "serverInfo", "capabilities",
//    "results": [{"op": "list", "tools": [...]},
//                {"op": "call", "name", "result": CallToolResult} | {"op", "name", "error": {code, message}}]}
//   or {"fatal": "…"} with exit status 1.
//
// The SDK validates `structuredContent` against each tool's `outputSchema`
// once the tools were listed; a mismatch shows up as an error result here.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

function describeError(e) {
  const out = { message: e instanceof Error ? e.message : String(e) };
  if (e && typeof e === "object" && "code" in e && e.code !== undefined) out.code = e.code;
  if (e && typeof e === "object" && "data" in e && e.data !== undefined) out.data = e.data;
  return out;
}

function emit(report, code) {
  process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(code));
}

function raw(client, method, params, timeoutMs) {
  return client.request({ method, params: params ?? {} }, ResultSchema, { timeout: timeoutMs });
}

async function walkSkills(client, timeoutMs) {
  const resources = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const listed = await client.listResources(cursor ? { cursor } : {}, { timeout: timeoutMs });
    resources.push(...listed.resources);
    cursor = listed.nextCursor;
    if (!cursor) break;
  }
  const list = await raw(client, "skills/list", {}, timeoutMs);
  const gets = [];
  for (const skill of list.skills ?? []) {
    gets.push(await raw(client, "skills/get", { uri: skill.uri }, timeoutMs));
  }
  const uris = gets.flatMap((g) => g.skill.resources.map((f) => f.uri)).concat(["api://products"]);
  const reads = [];
  for (const uri of uris) {
    const read = await client.readResource({ uri }, { timeout: timeoutMs });
    reads.push({ uri, contents: read.contents });
  }
  return { resources, list, gets, reads };
}

const plan = JSON.parse(await readStdin());
const timeoutMs = plan.timeoutMs ?? 60000;
const report = { client: "typescript-sdk", results: [] };
const watchdog = setTimeout(() => {
  emit({ ...report, fatal: `driver timed out after ${timeoutMs} ms` }, 1);
}, timeoutMs);
watchdog.unref();

try {
  const headers = plan.token ? { Authorization: `Bearer ${plan.token}` } : {};
  if (plan.userAgent) headers["User-Agent"] = plan.userAgent;
  const transport = new StreamableHTTPClientTransport(new URL(plan.url), {
    requestInit: { headers },
  });
  const client = new Client({ name: plan.clientName ?? "toolforge-e2e-typescript", version: "1.0.0" });
  await client.connect(transport, { timeout: timeoutMs });
  report.protocolVersion = transport.protocolVersion ?? null;
  report.serverInfo = client.getServerVersion() ?? null;
  report.capabilities = client.getServerCapabilities() ?? null;
  for (const step of plan.steps ?? []) {
    if (step.op === "list") {
      try {
        const tools = [];
        let cursor;
        for (let page = 0; page < 100; page++) {
          const listed = await client.listTools(cursor ? { cursor } : {}, { timeout: timeoutMs });
          tools.push(...listed.tools);
          cursor = listed.nextCursor;
          if (!cursor) break;
        }
        report.results.push({ op: "list", tools });
      } catch (e) {
        report.results.push({ op: "list", error: describeError(e) });
      }
    } else if (step.op === "call") {
      try {
        const result = await client.callTool(
          { name: step.name, arguments: step.arguments ?? {} },
          undefined,
          { timeout: timeoutMs },
        );
        report.results.push({ op: "call", name: step.name, result });
      } catch (e) {
        report.results.push({ op: "call", name: step.name, error: describeError(e) });
      }
    } else if (step.op === "skills") {
      try {
        report.results.push({ op: "skills", ...(await walkSkills(client, timeoutMs)) });
      } catch (e) {
        report.results.push({ op: "skills", error: describeError(e) });
      }
    } else if (step.op === "request") {
      try {
        const result = await raw(client, step.method, step.params, timeoutMs);
        report.results.push({ op: "request", method: step.method, result });
      } catch (e) {
        report.results.push({ op: "request", method: step.method, error: describeError(e) });
      }
    } else {
      report.results.push({ op: step.op, error: { message: `unknown op ${step.op}` } });
    }
  }
  await client.close();
  clearTimeout(watchdog);
  emit(report, 0);
} catch (e) {
  clearTimeout(watchdog);
  emit({ ...report, fatal: describeError(e).message }, 1);
}
