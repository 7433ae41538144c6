//! Fuzz targets for the spec loader and the whole generator (see
//! `toolforge-fuzz` for the driver, budgets and crash files):
//!
//! - `loader`: [`load`] on YAML and JSON text: the pinned sample and small
//!   generated OpenAPI documents, mutated as trees and as bytes, and
//!   hostile YAML (alias bombs, merge keys, tags, deep nesting, odd
//!   scalars). Properties: no panic, no hang, bounded memory; an error
//!   names the file, and a pointer when it has one.
//! - `generate`: the whole pipeline ([`generate`] in memory) on generated
//!   documents (`$ref` loops and bombs, every parameter location and
//!   style, both policies and schema profiles, names and descriptions
//!   that break code) and on the sample mutated as a tree. Properties: no
//!   panic or internal emit error; errors name the file and a well-formed
//!   JSON pointer; a generated crate has valid, unique tool names, object
//!   input schemas, relative file paths, JSON artifacts that parse and
//!   Rust files that parse.
//!
//! `TOOLFORGE_FUZZ_SECS=60 cargo test -p toolforge-generator --test fuzz_loader`
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};
use toolforge_fuzz::json::Doc;
use toolforge_fuzz::mutate::{havoc, nesting_depth};
use toolforge_fuzz::{Pool, Rng, Target};
use toolforge_generator::config::{InvalidOperation, PolicyKind, SchemaProfile};
use toolforge_generator::load::load;
use toolforge_generator::{ForgeConfig, GenerateError, generate};

/// The file name every input is loaded as (errors must name it).
const FILE: &str = "fuzz-spec.yaml";
/// Largest generated input.
const MAX_INPUT: usize = 1 << 20;

const KEYS: &[&str] = &[
    "openapi",
    "info",
    "paths",
    "components",
    "schemas",
    "parameters",
    "requestBodies",
    "responses",
    "content",
    "schema",
    "$ref",
    "type",
    "properties",
    "items",
    "required",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "nullable",
    "readOnly",
    "writeOnly",
    "enum",
    "const",
    "format",
    "pattern",
    "additionalProperties",
    "discriminator",
    "$defs",
    "in",
    "name",
    "style",
    "explode",
    "operationId",
    "summary",
    "description",
    "tags",
    "deprecated",
    "get",
    "post",
    "put",
    "delete",
    "patch",
    "servers",
    "security",
    "securitySchemes",
    "x-api-token-group",
    "x-cfPermissionsRequired",
    "webhooks",
    "swagger",
    "exclusiveMinimum",
    "examples",
    "contentMediaType",
    "prefixItems",
];

const STRINGS: &[&str] = &[
    "3.0.3",
    "3.1.0",
    "2.0",
    "object",
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "null",
    "path",
    "query",
    "header",
    "cookie",
    "form",
    "simple",
    "deepObject",
    "pipeDelimited",
    "#/components/schemas/A",
    "#/components/schemas/B",
    "#/components/parameters/P",
    "#",
    "#/",
    "#/paths",
    "other.yaml#/A",
    "https://example.com/s.json",
    "application/json",
    "multipart/form-data",
    "application/x-www-form-urlencoded",
    "application/octet-stream",
    "text/plain",
    "date-time",
    "binary",
    "/zones/{zone_id}",
    "/{account_or_zone}/{account_or_zone_id}/x",
];

fn target(name: &'static str, command: &'static str, seeds: Vec<Vec<u8>>) -> Target {
    Target {
        name,
        test: name,
        work_dir: env!("CARGO_TARGET_TMPDIR"),
        command,
        seeds,
    }
}

/// The pinned sample spec's bytes.
fn sample() -> &'static [u8] {
    static SAMPLE: OnceLock<Vec<u8>> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        let config = common::config();
        std::fs::read(common::repo().join(&config.spec.path)).unwrap()
    })
}

/// The sample as a JSON tree.
fn sample_tree() -> &'static Value {
    static TREE: OnceLock<Value> = OnceLock::new();
    TREE.get_or_init(|| load(sample(), FILE).unwrap().root)
}

// ---------------------------------------------------------------------------
// Generated OpenAPI documents
// ---------------------------------------------------------------------------

const PATHS: &[&str] = &[
    "/zones/{zone_id}/dns_records",
    "/zones/{zone_id}/dns_records/{dns_record_id}",
    "/accounts/{account_id}/workers/scripts/{script_name}",
    "/{account_or_zone}/{account_or_zone_id}/rulesets",
    "/{account_or_zone}/{account_or_zone_id}/rulesets/{ruleset_id}",
    "/accounts",
    "/",
    "/a/{id}",
    "/a/{id}/{id}",
    "/a/{}",
    "/a/{a}{b}",
    "/a b/{c d}",
    "/ü/{ä}",
    "/users/{user-id}/x.json",
    "/a/{self}/{fn}/{type}",
    "a/no-slash",
    "/a/{unclosed",
    "/a//b",
    "/a/../b",
    "/items/{item_id}:cancel",
];

const NAMES: &[&str] = &[
    "id",
    "zone_id",
    "account_id",
    "accountId",
    "account_identifier",
    "dns_record_id",
    "per_page",
    "name",
    "type",
    "self",
    "fn",
    "r#type",
    "a-b",
    "a.b",
    "a b",
    "",
    "数",
    "Name",
    "NAME",
    "_",
    "0",
    "$ref",
    "name_query",
];

const OPERATION_IDS: &[&str] = &[
    "dns-records-for-a-zone-list-dns-records",
    "listThings",
    "list_things",
    "ListThings",
    "users.user.ListMessages",
    "",
    "a",
    "0",
    "数据",
    "x/y/z",
    "fn",
    "self",
    "crate",
    "super",
    "type",
    "async",
    "tools/list",
    "a__b",
    "_",
];

/// Names and descriptions that break code or markup when written raw.
const TEXTS: &[&str] = &[
    "Lists things.",
    "",
    "\"quoted\" and \\backslash\\",
    "*/ /* comment */ //",
    "{{handlebars}} {{{triple}}} {{#each x}}",
    "`code` | table | <b>html</b> # heading",
    "line\nbreak\r\nand\ttab",
    "\u{0}nul",
    "\u{202e}rtl",
    "r#\"raw\"#",
    "#[doc = \"x\"]",
    "🦀 unicode é",
    "</script>",
    "${template}",
];

fn text(rng: &mut Rng) -> Value {
    if rng.one_in(10) {
        json!("x".repeat(rng.range(100, 20_000)))
    } else {
        json!(*rng.pick(TEXTS))
    }
}

/// A schema at most `depth` levels deep, with `$ref`s into `schemas`
/// (`count` component schemas named `S0`…).
fn schema(rng: &mut Rng, depth: usize, count: usize) -> Value {
    if rng.one_in(5) || depth == 0 {
        return match rng.below(8) {
            0 if count > 0 => {
                json!({"$ref": format!("#/components/schemas/S{}", rng.below(count))})
            }
            1 => json!({"$ref": *rng.pick(&[
                "#/components/schemas/Missing",
                "#/components/schemas/S0/properties/a",
                "#",
                "#/paths",
                "other.yaml#/S0",
                "https://example.com/x.json",
                "#/components/schemas/a~1b",
                "#/components/schemas/%53%30",
                "#components/schemas/S0",
                "",
            ])}),
            2 => {
                json!({"type": "string", "format": *rng.pick(&["date-time", "binary", "uuid", "email", "byte", "weird"]), "enum": ["a", "b", 1, null]})
            }
            3 => {
                json!({"type": *rng.pick(&["integer", "number"]), "minimum": 0, "exclusiveMaximum": rng.pick(&[json!(true), json!(10)]).clone()})
            }
            4 => json!({"type": ["string", "null"]}),
            5 => json!({"type": "boolean", "default": rng.one_in(2)}),
            6 => json!({}),
            _ => {
                json!({"type": "string", "pattern": *rng.pick(&["^[a-z]+$", "(", "\\p{L}+", "[[:alpha:]]"]), "maxLength": 10})
            }
        };
    }
    let mut s = match rng.below(7) {
        0 | 1 => {
            let mut props = Map::new();
            for _ in 0..rng.range(0, 4) {
                props.insert((*rng.pick(NAMES)).to_owned(), schema(rng, depth - 1, count));
            }
            let mut s = json!({"type": "object", "properties": props});
            if rng.one_in(2) {
                s["required"] = json!([*rng.pick(NAMES), *rng.pick(NAMES)]);
            }
            if rng.one_in(4) {
                s["additionalProperties"] = if rng.one_in(2) {
                    json!(false)
                } else {
                    schema(rng, depth - 1, count)
                };
            }
            s
        }
        2 => json!({"type": "array", "items": schema(rng, depth - 1, count)}),
        3 | 4 => {
            let key = *rng.pick(&["allOf", "oneOf", "anyOf"]);
            let members: Vec<Value> = (0..rng.range(0, 3))
                .map(|_| schema(rng, depth - 1, count))
                .collect();
            let mut s = json!({ key: members });
            if rng.one_in(3) {
                s["discriminator"] = json!({"propertyName": "type"});
            }
            s
        }
        5 => json!({"not": schema(rng, depth - 1, count)}),
        _ => json!({"$defs": {"D": schema(rng, depth - 1, count)}, "$ref": "#/$defs/D"}),
    };
    for (key, value) in [
        ("nullable", json!(true)),
        ("readOnly", json!(true)),
        ("writeOnly", json!(true)),
        ("description", text(rng)),
        ("example", json!({"a": 1})),
        ("x-extension", json!([1])),
        ("title", text(rng)),
    ] {
        if rng.one_in(6) {
            s[key] = value;
        }
    }
    s
}

fn parameter(rng: &mut Rng, count: usize, path: &str) -> Value {
    if rng.one_in(6) {
        return json!({"$ref": *rng.pick(&["#/components/parameters/P", "#/components/parameters/Nope"])});
    }
    // Mostly a placeholder of the path, so path parameters line up.
    let placeholder = path
        .split('{')
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .filter(|_| rng.one_in(2));
    let name = placeholder.unwrap_or_else(|| *rng.pick(NAMES));
    let location = if placeholder.is_some() {
        "path"
    } else {
        *rng.pick(&[
            "path", "query", "query", "header", "cookie", "body", "formData",
        ])
    };
    let mut p = json!({"name": name, "in": location, "schema": schema(rng, 2, count)});
    if location == "path" || rng.one_in(3) {
        p["required"] = json!(location == "path" || rng.one_in(2));
    }
    if rng.one_in(3) {
        p["style"] = json!(*rng.pick(&[
            "form",
            "simple",
            "deepObject",
            "pipeDelimited",
            "spaceDelimited",
            "matrix",
            "label",
            "bogus"
        ]));
        p["explode"] = json!(rng.one_in(2));
    }
    if rng.one_in(8) {
        p["content"] = json!({"application/json": {"schema": schema(rng, 1, count)}});
    }
    if rng.one_in(8) {
        p["allowReserved"] = json!(true);
    }
    p
}

fn operation(rng: &mut Rng, count: usize, path: &str) -> Value {
    let mut op = json!({
        "responses": {},
        "summary": text(rng),
    });
    if !rng.one_in(6) {
        op["operationId"] = json!(*rng.pick(OPERATION_IDS));
    }
    if rng.one_in(2) {
        op["description"] = text(rng);
    }
    if rng.one_in(2) {
        op["tags"] = json!([*rng.pick(&[
            "DNS Records for a Zone",
            "Zone",
            "",
            "a/b",
            "数",
            "Workers KV Namespace"
        ])]);
    }
    let params: Vec<Value> = (0..rng.range(0, 4))
        .map(|_| parameter(rng, count, path))
        .collect();
    op["parameters"] = json!(params);
    if rng.one_in(2) {
        let media = *rng.pick(&[
            "application/json",
            "multipart/form-data",
            "application/x-www-form-urlencoded",
            "application/octet-stream",
            "text/plain",
            "application/*",
            "*/*",
            "application/json; charset=utf-8",
        ]);
        op["requestBody"] = if rng.one_in(6) {
            json!({"$ref": "#/components/requestBodies/R"})
        } else {
            json!({"required": rng.one_in(2), "content": {media: {"schema": schema(rng, 3, count)}}})
        };
    }
    for _ in 0..rng.range(0, 3) {
        let status = *rng.pick(&["200", "201", "204", "2XX", "default", "400", "4XX", "abc"]);
        let mut response = json!({"description": text(rng)});
        if !rng.one_in(4) {
            response["content"] = json!({"application/json": {"schema": schema(rng, 3, count)}});
        }
        if rng.one_in(8) {
            response = json!({"$ref": "#/components/responses/Ok"});
        }
        op["responses"][status] = response;
    }
    if rng.one_in(4) {
        op["x-api-token-group"] = json!([*rng.pick(&["DNS Read", "DNS Write", ""]), "Zone Read"]);
    }
    if rng.one_in(6) {
        op["x-cfPermissionsRequired"] = json!({"enum": ["#dns_records:read"]});
    }
    if rng.one_in(6) {
        op["deprecated"] = json!(true);
    }
    if rng.one_in(8) {
        op["security"] = json!([{"api_token": []}, {}]);
    }
    op
}

/// A small OpenAPI document with the shapes the generator must handle.
fn spec(rng: &mut Rng) -> Value {
    let count = rng.range(0, 6);
    let mut schemas = Map::new();
    for i in 0..count {
        schemas.insert(format!("S{i}"), schema(rng, 3, count));
    }
    match rng.below(8) {
        // a `$ref` bomb: each level references the next one several times
        0 => {
            let levels = rng.range(8, 40);
            for i in 0..levels {
                let next = json!({"$ref": format!("#/components/schemas/L{}", i + 1)});
                schemas.insert(
                    format!("L{i}"),
                    json!({"type": "object", "properties": {"a": next, "b": next, "c": next, "d": {"type": "array", "items": next}}}),
                );
            }
            schemas.insert(format!("L{levels}"), json!({"type": "string"}));
            schemas.insert("S0".into(), json!({"$ref": "#/components/schemas/L0"}));
        }
        // reference loops without a schema in between
        1 => {
            schemas.insert("S0".into(), json!({"$ref": "#/components/schemas/S1"}));
            schemas.insert("S1".into(), json!({"$ref": "#/components/schemas/S0"}));
            schemas.insert("S2".into(), json!({"$ref": "#/components/schemas/S2"}));
            schemas.insert(
                "S3".into(),
                json!({"allOf": [{"$ref": "#/components/schemas/S3"}]}),
            );
        }
        // a long chain of references
        2 => {
            let n = rng.range(10, 2000);
            for i in 0..n {
                schemas.insert(
                    format!("C{i}"),
                    json!({"$ref": format!("#/components/schemas/C{}", i + 1)}),
                );
            }
            schemas.insert(format!("C{n}"), json!({"type": "object"}));
            schemas.insert("S0".into(), json!({"$ref": "#/components/schemas/C0"}));
        }
        _ => {}
    }
    let mut paths = Map::new();
    for _ in 0..rng.range(1, 4) {
        let path = *rng.pick(PATHS);
        let mut item = Map::new();
        for _ in 0..rng.range(1, 3) {
            let method = *rng.pick(&[
                "get", "post", "put", "delete", "patch", "head", "options", "trace", "query", "GET",
            ]);
            item.insert(method.into(), operation(rng, count.max(1), path));
        }
        if rng.one_in(4) {
            item.insert("parameters".into(), json!([parameter(rng, count, path)]));
        }
        if rng.one_in(10) {
            item.insert("$ref".into(), json!("#/paths/~1accounts"));
        }
        paths.insert(path.into(), Value::Object(item));
    }
    let version = match rng.below(12) {
        0..=5 => "3.0.3",
        6..=9 => "3.1.0",
        10 => "3.0",
        _ => *rng.pick(&["3.1.1", "3.0.0-rc0", "3.2.0", "2.0", "3"]),
    };
    let mut doc = json!({
        "openapi": version,
        "info": {"title": text(rng), "version": "1"},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "parameters": {"P": {"name": "per_page", "in": "query", "schema": {"type": "integer"}}},
            "requestBodies": {"R": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}},
            "responses": {"Ok": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}},
            "securitySchemes": {"api_token": {"type": "http", "scheme": "bearer"}},
        },
    });
    if version.starts_with("3.1") && rng.one_in(3) {
        doc["webhooks"] = json!({"w": {"post": operation(rng, count.max(1), "/")}});
    }
    if rng.one_in(10) {
        doc["swagger"] = json!("2.0");
    }
    doc
}

/// A document as text: JSON or YAML, sometimes mutated as a tree first.
fn render(rng: &mut Rng, value: Value) -> Vec<u8> {
    let mut doc = Doc::new(value);
    if rng.one_in(3) {
        doc.mutate(rng, KEYS, STRINGS);
    }
    if rng.one_in(2) {
        // Raw splices are JSON text, so a mutated tree stays JSON.
        doc.render(rng.one_in(2))
    } else {
        match yaml_serde::to_string(&doc.value) {
            Ok(yaml) => yaml.into_bytes(),
            Err(_) => doc.render(false),
        }
    }
}

// ---------------------------------------------------------------------------
// Hostile YAML
// ---------------------------------------------------------------------------

const YAML_HEAD: &str = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n";

fn hostile_yaml(rng: &mut Rng) -> Vec<u8> {
    let mut y = String::from(YAML_HEAD);
    match rng.below(13) {
        // billion laughs: each level aliases the previous one `fan` times
        0 => {
            let fan = rng.range(2, 12);
            let levels = rng.range(2, 12);
            let _ = writeln!(y, "l0: &l0 [{}]", vec!["lol"; fan].join(", "));
            for i in 1..levels {
                let refs = vec![format!("*l{}", i - 1); fan].join(", ");
                let _ = writeln!(y, "l{i}: &l{i} [{refs}]");
            }
        }
        // one wide anchor, aliased many times: the expansion grows with
        // the product, while the count of alias jumps stays small
        1 => {
            // mostly below the loader's bound, now and then far beyond it
            let most = if rng.one_in(8) { 1200 } else { 300 };
            let width = rng.range(10, most);
            let aliases = rng.range(10, most);
            let _ = writeln!(y, "a: &a [{}]", vec!["x"; width].join(","));
            let _ = writeln!(y, "b: [{}]", vec!["*a"; aliases].join(","));
        }
        // merge keys from a chain of anchors
        2 => {
            let n = rng.range(2, 40);
            let _ = writeln!(y, "m0: &m0 {{k0: 0, big: [1, 2, 3, 4, 5, 6, 7, 8]}}");
            for i in 1..n {
                let _ = writeln!(
                    y,
                    "m{i}: &m{i}\n  <<: [*m{}, *m{}]\n  k{i}: {i}",
                    i - 1,
                    (i - 1) / 2
                );
            }
        }
        // malformed merges and aliases
        3 => {
            let case: &&str = rng.pick(&[
                "a: {<<: 5}\n",
                "a: {<<: [1, 2]}\n",
                "a: &a {<<: *a}\n",
                "a: *undefined\n",
                "a: &a 1\nb: &a 2\nc: *a\n",
                "a: &a\n  b: *a\n",
                "&a a: 1\n*a : 2\n",
                "a: !!binary aGVsbG8=\n",
                "a: !custom {x: 1}\n",
                "a: !!map [1]\n",
                "a: !<tag:yaml.org,2002:str> 1\n",
                "? [1, 2]\n: x\n",
                "? {a: 1}\n: x\n",
                "a: 1\na: 2\n",
                "paths: 1\n",
                "openapi: 3.1.0\n",
                "--- \nb: 1\n",
                "...\n",
                "%YAML 1.1\n---\na: 1\n",
                "a: |\n  block\n   text\n",
                "a: >-\n  folded\n",
                "\ta: tab indented\n",
                "a: 'unterminated\n",
                "a: [1, 2\n",
                "a:\n- 1\n - 2\n",
                "<<: {openapi: 3.1.0}\n",
                "a: &a !tag [1]\nb: *a\n",
            ]);
            y.push_str(case);
        }
        // scalars at the edges
        4 => {
            for _ in 0..rng.range(1, 6) {
                let v = rng.pick(&[
                    ".nan",
                    ".NaN",
                    ".inf",
                    "-.inf",
                    "0o17",
                    "0x_ff",
                    "0xffffffffffffffffff",
                    "1_000",
                    "+12",
                    "1e400",
                    "-1e400",
                    "0b101",
                    "1:20",
                    "~",
                    "Null",
                    "yes",
                    "on",
                    "2001-12-14",
                    "12e03",
                    "-0",
                    "18446744073709551616",
                    "-9223372036854775809",
                    "''",
                    "\"\\u0000\"",
                    "\"\\ud800\"",
                    "\"\\x41\"",
                    "!!float 1",
                    "!!int x",
                    "!!str",
                    "&x",
                    "*",
                    "[[[]]]",
                ]);
                let _ = writeln!(y, "k{}: {v}", rng.below(100));
            }
        }
        // deep nesting, flow or block
        5 => {
            let depth = nesting_depth(rng);
            match rng.below(3) {
                0 => {
                    let _ = writeln!(y, "a: {}1{}", "[".repeat(depth), "]".repeat(depth));
                }
                1 => {
                    let _ = writeln!(y, "a: {}1{}", "{a: ".repeat(depth), "}".repeat(depth));
                }
                _ => {
                    y.push_str("a:\n");
                    for i in 0..depth.min(2000) {
                        let _ = writeln!(y, "{}- ", " ".repeat(i * 2 + 2));
                    }
                }
            }
        }
        // deep flow nesting behind constructs that contain brackets as
        // text: a scanner that misreads them would miss the nesting
        7 => {
            let hide: &&str = rng.pick(&[
                "a: 'quote [[[ over\n  two lines' \n",
                "a: \"esc \\\" [[[\\\n  more\"\n",
                "a: |\n  block [[[\n   text {{{\nb2: 1\n",
                "a: >-\n    folded [[[\n",
                "a: plain [[[\n  continued {{{\n",
                "# comment [[[\n",
                "a: !<tag:[[[> x\n",
                "a: &anchor [x, '[[[', \"{{{\"]\n",
                "? [complex, key]\n: v\n",
                "- - - [a, b]\n",
                "a: x #[[[\n",
            ]);
            y.push_str(hide);
            let depth = *rng.pick(&[100, 126, 127, 128, 129, 130, 1000, 5000]);
            let (open, close) = *rng.pick(&[
                ("[", "]"),
                ("{a: ", "}"),
                ("[ 'x', ", "]"),
                ("{\"k\": ", "}"),
            ]);
            let _ = writeln!(y, "z: {}1{}", open.repeat(depth), close.repeat(depth));
        }
        // a deep chain of aliases, each wrapping the last
        6 => {
            let n = rng.range(2, 300);
            y.push_str("d0: &d0 [x]\n");
            for i in 1..n {
                let _ = writeln!(y, "d{i}: &d{i} [*d{}]", i - 1);
            }
        }
        // a generated spec with anchors spliced into its YAML
        _ => {
            let spec = spec(rng);
            let mut text = yaml_serde::to_string(&spec).unwrap_or_default();
            if let Some(at) = text.find("schemas:\n") {
                let anchor = "\n    Shared: &shared {type: object, properties: {a: {type: string}}}\n    Again: *shared";
                text.insert_str(at + "schemas:".len(), anchor);
            }
            return text.into_bytes();
        }
    }
    y.into_bytes()
}

const TOKENS: &[&[u8]] = &[
    b"$ref: '#/components/schemas/S0'",
    b"\"$ref\": \"#\"",
    b": ",
    b"- ",
    b"\n  ",
    b"&a ",
    b"*a",
    b"<<: ",
    b"!!binary ",
    b"? ",
    b"---\n",
    b"'",
    b"\"",
    b"{",
    b"[",
    b"#",
    b"|",
    b"\t",
    b"openapi: 3.1.0\n",
    b"swagger: '2.0'\n",
    b"nullable: true",
    b"type: [string, 'null']",
];

// ---------------------------------------------------------------------------
// Target `loader`
// ---------------------------------------------------------------------------

#[test]
fn loader() {
    let mut seeds = vec![
        sample().to_vec(),
        serde_json::to_vec(sample_tree()).unwrap(),
        YAML_HEAD.as_bytes().to_vec(),
        br#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {}}"#.to_vec(),
    ];
    for entry in std::fs::read_dir(common::repo().join("generator/tests/fixtures/bad")).unwrap() {
        seeds.push(std::fs::read(entry.unwrap().path()).unwrap());
    }
    toolforge_fuzz::run(
        target(
            "loader",
            "cargo test -p toolforge-generator --test fuzz_loader loader",
            seeds,
        ),
        generate_text,
        check_load,
    );
}

fn generate_text(rng: &mut Rng, pool: &Pool) -> Vec<u8> {
    let mut out = match rng.below(10) {
        0 | 1 => hostile_yaml(rng),
        2..=4 => {
            let value = spec(rng);
            render(rng, value)
        }
        // the sample as a tree, mutated
        5 => render(rng, sample_tree().clone()),
        _ => pool.pick(rng).to_vec(),
    };
    if rng.one_in(2) {
        let other = pool.pick(rng).to_vec();
        havoc(rng, &mut out, TOKENS, &other, MAX_INPUT);
    }
    out.truncate(MAX_INPUT);
    out
}

/// Checks the message of a loader or generator error; returns a label.
fn check_error(e: &GenerateError) -> Result<String, String> {
    let text = e.to_string();
    if let GenerateError::Emit { .. } = e {
        return Err(format!("an internal emit error: {text}"));
    }
    if !text.starts_with(&format!("{FILE}: ")) {
        return Err(format!(
            "the error does not start with the file name: {text}"
        ));
    }
    if let Some(pointer) = e.pointer() {
        check_pointer(pointer).map_err(|why| format!("{why}: {text}"))?;
        if !text.contains(pointer) {
            return Err(format!(
                "the message does not show its pointer `{pointer}`: {text}"
            ));
        }
    } else if !matches!(e, GenerateError::Syntax { .. }) {
        return Err(format!("a {} error without a pointer: {text}", e.kind()));
    }
    let detail = match e {
        GenerateError::Syntax { message, .. }
        | GenerateError::NotOpenApi { message, .. }
        | GenerateError::Invalid { message, .. } => shape(message),
        _ => String::new(),
    };
    Ok(format!("{} {detail}", e.kind()))
}

/// A JSON pointer (RFC 6901): empty, or `/`-separated tokens in which `~`
/// is always `~0` or `~1`.
fn check_pointer(pointer: &str) -> Result<(), String> {
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(format!("`{pointer}` is not a JSON pointer"));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!("`{pointer}` has a bad `~` escape"));
        }
    }
    Ok(())
}

/// The first words of a message, without quoted parts or numbers.
fn shape(message: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in message.chars() {
        match c {
            '`' | '"' => quoted = !quoted,
            _ if quoted || c.is_ascii_digit() => {}
            _ => out.push(c),
        }
        if out.len() >= 40 {
            break;
        }
    }
    out
}

fn check_load(input: &[u8]) -> Result<String, String> {
    let loaded = load(input, FILE);
    // The flow-nesting pre-scan refuses only what the YAML deserializer
    // refuses too (checked where that stays cheap: its time grows with the
    // square of the nesting).
    if let Err(e) = &loaded
        && e.to_string().contains("nest deeper than")
        && input.len() <= 8192
        && yaml_serde::from_slice::<yaml_serde::Value>(input).is_ok()
    {
        return Err(format!(
            "the flow-nesting pre-scan refused a document YAML reads: {e}"
        ));
    }
    match loaded {
        Ok(doc) => {
            let Some(root) = doc.root.as_object() else {
                return Err("a loaded document whose root is not an object".into());
            };
            if !doc.openapi_version.trim().starts_with("3.") {
                return Err(format!("loaded OpenAPI version {}", doc.openapi_version));
            }
            if !root.get("openapi").is_some_and(Value::is_string) {
                return Err("a loaded document without a string `openapi`".into());
            }
            Ok(format!(
                "ok {} {}",
                &doc.openapi_version.get(..3).unwrap_or_default(),
                toolforge_fuzz::json::count_nodes(&doc.root).ilog2()
            ))
        }
        Err(e) => check_error(&e),
    }
}

// ---------------------------------------------------------------------------
// Target `generate`
// ---------------------------------------------------------------------------

#[test]
fn generate_pipeline() {
    let mut seeds = Vec::new();
    for flags in [0u8, 0b1, 0b10, 0b11] {
        let mut input = vec![flags];
        input.extend_from_slice(YAML_HEAD.as_bytes());
        seeds.push(input);
    }
    let mut input = vec![0];
    input.extend_from_slice(sample());
    seeds.push(input);
    toolforge_fuzz::run(
        Target {
            test: "generate_pipeline",
            ..target(
                "generate",
                "cargo test -p toolforge-generator --test fuzz_loader generate_pipeline",
                seeds,
            )
        },
        generate_spec,
        check_generate,
    );
}

fn generate_spec(rng: &mut Rng, pool: &Pool) -> Vec<u8> {
    let flags = rng.next_u64() as u8;
    let body = match rng.below(20) {
        // the sample, mutated as a tree (slow: a few per second)
        0 => {
            let mut doc = Doc::new(sample_tree().clone());
            doc.mutate(rng, KEYS, STRINGS);
            doc.render(false)
        }
        1 => hostile_yaml(rng),
        2..=13 => {
            let value = spec(rng);
            render(rng, value)
        }
        _ => {
            let base = pool.pick(rng);
            let mut body = base.get(1..).unwrap_or_default().to_vec();
            if base.len() > 100_000 || rng.one_in(2) {
                // mutate small inputs only, the sample stays a rare case
                body = match Doc::parse(&body) {
                    Some(mut doc) if body.len() < 100_000 => {
                        doc.mutate(rng, KEYS, STRINGS);
                        doc.render(false)
                    }
                    _ => {
                        let value = spec(rng);
                        render(rng, value)
                    }
                };
            } else {
                let other = pool.pick(rng).to_vec();
                havoc(rng, &mut body, TOKENS, &other, MAX_INPUT);
            }
            body
        }
    };
    let mut input = vec![flags];
    input.extend_from_slice(&body);
    input.truncate(MAX_INPUT);
    input
}

/// The configuration an input's first byte selects.
fn config(flags: u8) -> ForgeConfig {
    static BASE: OnceLock<ForgeConfig> = OnceLock::new();
    let mut config = BASE.get_or_init(common::config).clone();
    config.policy = if flags & 1 == 0 {
        PolicyKind::Cloudflare
    } else {
        PolicyKind::Generic
    };
    config.options.schema_profile = if flags & 2 == 0 {
        SchemaProfile::Full
    } else {
        SchemaProfile::Strict
    };
    config.options.on_invalid_operation = if flags & 4 == 0 {
        InvalidOperation::Fail
    } else {
        InvalidOperation::Skip
    };
    config.options.share_subschemas = flags & 8 == 0;
    config.options.resolved_spec = flags & 16 == 0;
    if flags & 32 != 0 {
        config.options.max_schema_depth = 8;
        config.options.max_schema_nodes = 2000;
    }
    config
}

fn check_generate(input: &[u8]) -> Result<String, String> {
    let Some((&flags, spec)) = input.split_first() else {
        return Ok("empty".into());
    };
    let config = config(flags);
    let layout = common::layout(&config);
    let generated = match generate(spec, FILE, &config, &layout) {
        Ok(g) => g,
        Err(e) => return check_error(&e),
    };
    let mut names = BTreeSet::new();
    for tool in generated.catalogue.tools() {
        let name = &tool.name;
        if name.is_empty()
            || name.len() > 64
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(format!("bad tool name `{name}`"));
        }
        if !names.insert(name.clone()) {
            return Err(format!("duplicate tool name `{name}`"));
        }
        let schema = &tool.input_schema;
        if schema["type"] != "object" {
            return Err(format!(
                "`{name}`: the input schema is not `type: object`: {schema}"
            ));
        }
        for key in ["oneOf", "anyOf", "allOf", "not", "if", "then", "else"] {
            if schema.get(key).is_some() {
                return Err(format!(
                    "`{name}`: the input schema has a top-level `{key}`"
                ));
            }
        }
    }
    for file in &generated.files {
        let path = std::path::Path::new(&file.path);
        if file.path.is_empty()
            || !path
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
        {
            return Err(format!(
                "an output path that leaves the crate: `{}`",
                file.path
            ));
        }
        if file.path.ends_with(".json") {
            // artifacts: one JSON document, or one per line
            let whole = serde_json::from_slice::<Value>(&file.contents).is_ok();
            let lines = file
                .contents
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .all(|l| serde_json::from_slice::<Value>(l).is_ok());
            if !whole && !lines {
                return Err(format!("`{}` is not JSON", file.path));
            }
        }
        if file.path.ends_with(".rs") {
            let text = std::str::from_utf8(&file.contents)
                .map_err(|e| format!("`{}` is not UTF-8: {e}", file.path))?;
            if let Err(e) = syn::parse_file(text) {
                return Err(format!("`{}` is not valid Rust: {e}", file.path));
            }
        }
    }
    let tools = generated.catalogue.tools().count();
    Ok(format!(
        "ok {} tools, {} skipped, profile {}",
        tools.min(4),
        generated.catalogue.skipped.len().min(2),
        flags & 2
    ))
}
