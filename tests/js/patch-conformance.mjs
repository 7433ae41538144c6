#!/usr/bin/env node
// Makes `@modelcontextprotocol/conformance` start on Node 20.
//
// Its bundled dist/index.js imports `globSync` from `fs`, which Node added
// in 22; on Node 20 the whole CLI then fails to load ("does not provide an
// export named 'globSync'"). Only the `tier-check` command uses it, so the
// import is dropped and the local name bound to a stub that explains itself
// if `tier-check` is ever run. Idempotent: a marker comment records the
// patch, and a second run changes nothing. No-op on Node >= 22.
//
// Usage: node tests/js/patch-conformance.mjs [path/to/conformance/dist/index.js]

import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const MARKER = "/* toolforge: globSync import removed for Node 20 */";
const here = dirname(fileURLToPath(import.meta.url));
const target =
  process.argv[2] ??
  join(here, "..", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");

if (!existsSync(target)) {
  console.error(`patch-conformance: ${target} not found; run \`npm ci --prefix tests\` first`);
  process.exit(1);
}
const source = readFileSync(target, "utf8");
if (source.includes(MARKER)) {
  console.error("patch-conformance: already patched");
  process.exit(0);
}
// The `import{...}from"fs"` (or 'fs' / "node:fs") statement holding globSync.
const importRe = /import\s*\{([^}]*)\}\s*from\s*(["'])(?:node:)?fs\2\s*;?/g;
let alias = null;
const patched = source.replace(importRe, (statement, specifiers) => {
  const items = specifiers.split(",").map((s) => s.trim()).filter(Boolean);
  const glob = items.find((s) => /^globSync(\s+as\s+[\w$]+)?$/.test(s));
  if (!glob) return statement;
  alias = glob.split(/\s+as\s+/)[1] ?? "globSync";
  const rest = items.filter((s) => s !== glob);
  return rest.length ? `import{${rest.join(",")}}from"fs";` : "";
});
if (alias === null) {
  console.error("patch-conformance: no globSync import from fs; nothing to patch");
  process.exit(0);
}
const stub =
  `\n${MARKER}\nfunction ${alias}(){throw new Error("conformance: globSync needs Node 22+ ` +
  `(only the tier-check command uses it; removed by tests/js/patch-conformance.mjs)")}\n`;
writeFileSync(target, patched + stub);
console.error(`patch-conformance: patched ${target} (globSync bound as \`${alias}\`)`);
