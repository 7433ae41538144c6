#!/usr/bin/env python3
"""Counts `$ref`s that name no root `$defs` entry in the input and output
schemas of a generated crate's artifacts/tools.json (shared texts put back).

    python3 generator/scripts/unresolved-refs.py OUT_DIR
"""
import json
import sys

def main(out_dir):
    doc = json.load(open(f"{out_dir}/artifacts/tools.json"))
    shared = doc.get("schemas", {})
    key = "x-toolforge-chunk"

    def expand(v):
        if isinstance(v, dict):
            if len(v) == 1 and key in v and v[key] in shared:
                return expand(shared[v[key]])
            return {k: expand(x) for k, x in v.items()}
        if isinstance(v, list):
            return [expand(x) for x in v]
        return v

    def refs(v, out):
        if isinstance(v, dict):
            if isinstance(v.get("$ref"), str):
                out.append(v["$ref"])
            for x in v.values():
                refs(x, out)
        elif isinstance(v, list):
            for x in v:
                refs(x, out)

    bad = 0
    for tool in doc["tools"]:
        for field in ("input_schema", "output_schema"):
            schema = tool.get(field)
            if isinstance(schema, str):
                schema = shared[schema]
            if schema is None:
                continue
            schema = expand(schema)
            defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}
            found = []
            refs(schema, found)
            bad += sum(1 for r in found if not (r.startswith("#/$defs/") and r[8:] in defs))
    print(f"{len(doc['tools'])} tools, {bad} unresolved references")


if __name__ == "__main__":
    sys.setrecursionlimit(100000)
    main(sys.argv[1])
