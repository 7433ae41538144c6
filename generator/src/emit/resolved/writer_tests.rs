//! Tests of the resolved-document writer (kept next to `writer.rs`).
use serde_json::json;

use super::*;
use crate::config::PolicyKind;
use crate::ir::MergedPaths;

fn doc(root: Value) -> Document {
    Document {
        root,
        file: "spec.json".into(),
        openapi_version: "3.0.3".into(),
    }
}

/// The document of `d` as `generate` writes it under the generic policy.
fn write_generic(d: &Document) -> Result<Vec<u8>> {
    // The generic policy merges no path.
    let merged = MergedPaths::default();
    write_document(d, &Cycles::compute(d), &Limits::default(), &merged, "gen")
}

/// `written` with every inline marker replaced by its target and the
/// root's note removed: what the runtime's spec index shows.
fn read_markers(mut written: Value) -> Value {
    fn expand(value: &Value, root: &Value, hops: usize) -> Value {
        match value {
            Value::Object(map) if map.len() == 1 && map.contains_key(INLINE_MARKER) => {
                assert!(hops < 64, "marker chain");
                let pointer = map[INLINE_MARKER].as_str().unwrap();
                let target = root.pointer(&pointer[1..]).unwrap();
                expand(target, root, hops + 1)
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), expand(v, root, 0)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| expand(v, root, 0)).collect()),
            other => other.clone(),
        }
    }
    let note = written
        .as_object_mut()
        .unwrap()
        .shift_remove(INLINE_REFS_KEY);
    let out = expand(&written, &written, 0);
    assert_eq!(note.is_some(), out != written, "note iff markers");
    out
}

/// How many inline markers `value` holds.
fn markers(value: &Value) -> usize {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key(INLINE_MARKER) => 1,
        Value::Object(map) => map.values().map(markers).sum(),
        Value::Array(items) => items.iter().map(markers).sum(),
        _ => 0,
    }
}

/// The writer's output (markers read as their targets) equals the value
/// resolver's, merged paths split.
fn check_same(d: &Document, kind: PolicyKind) -> Value {
    let merged = crate::policy::Policy::new(kind).merged_paths(d);
    let cycles = Cycles::compute(d);
    let bytes = write_document(d, &cycles, &Limits::default(), &merged, "gen").unwrap();
    let written = read_markers(serde_json::from_slice(&bytes).unwrap());
    let mut expected = super::super::resolve_document(d, &Limits::default()).unwrap();
    crate::emit::resolved::split_merged_paths(&mut expected, &merged);
    expected[GENERATED_KEY] = json!("gen");
    assert_eq!(
        serde_json::to_string(&written).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    written
}

#[test]
fn matches_the_value_resolver() {
    let d = doc(json!({
        "openapi": "3.0.3",
        "paths": {
            "/{account_or_zone}/{account_or_zone_id}/rules": {
                "parameters": [{"$ref": "#/components/parameters/Sel"}, {"name": "account_or_zone_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": {"responses": {"200": {"$ref": "#/components/responses/Ok"}}}
            },
            "/pets/{id}": {"get": {"parameters": [{"$ref": "#/components/parameters/Id"}],
                "responses": {"200": {"description": "d", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tree", "description": "over", "title": "new"}}}}}}}
        },
        "components": {
            "parameters": {
                "Sel": {"name": "account_or_zone", "in": "path", "required": true, "schema": {"type": "string"}},
                "Id": {"name": "id", "in": "path", "schema": {"$ref": "#/components/schemas/Id"}}
            },
            "responses": {"Ok": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tree"}}}}},
            "schemas": {
                "Id": {"type": "string", "description": "an \"id\"\n"},
                "Tree": {"type": "object", "description": "t", "properties": {"kids": {"type": "array", "items": {"$ref": "#/components/schemas/Tree", "description": "child"}}, "id": {"$ref": "#/components/schemas/Id"}}},
                "Empty": {},
                "Alias": {"$ref": "#/components/schemas/Empty", "title": "x"}
            }
        }
    }));
    let out = check_same(&d, PolicyKind::Cloudflare);
    assert!(out["paths"].get("/accounts/{account_id}/rules").is_some());
    assert_eq!(out["components"]["schemas"]["Alias"], json!({"title": "x"}));
    check_same(&d, PolicyKind::Generic);
    let bytes = write_generic(&d).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.starts_with("{\n\"openapi\":\"3.0.3\",\n\"paths\":{\n\"/{account_or_zone}"));
    assert!(text.contains("\n\"Tree\":{"), "{text}");
    assert!(text.ends_with(",\n\"x-toolforge-generated\":\"gen\"\n}\n"));
}

#[test]
fn dag_shaped_documents_keep_large_shared_refs() {
    let mut schemas = Map::new();
    for i in 0..40 {
        let next = json!({"$ref": format!("#/components/schemas/S{}", i + 1)});
        schemas.insert(
            format!("S{i}"),
            json!({"type": "object", "properties": {"a": next.clone(), "b": next}}),
        );
    }
    schemas.insert("S40".into(), json!({"type": "string", "enum": ["x"]}));
    let d = doc(json!({
        "openapi": "3.0.3",
        "paths": {"/s": {"get": {"responses": {"200": {"description": "d", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}}}}},
        "components": {"schemas": schemas}
    }));
    let cycles = Cycles::compute(&d);
    assert!(
        cycles.document_size() > 1 << 40,
        "{}",
        cycles.document_size()
    );
    let bytes = write_generic(&d).unwrap();
    assert!(bytes.len() < 20_000, "{}", bytes.len());
    let out: Value = serde_json::from_slice(&bytes).unwrap();
    let schema =
        &out["paths"]["/s"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    assert_eq!(schema, &json!({"$ref": "#/components/schemas/S0"}));
    // Small targets are still inlined.
    assert_eq!(
        out["components"]["schemas"]["S39"]["properties"]["a"],
        json!({"type": "string", "enum": ["x"]})
    );
    assert!(out[SHARED_REFS_KEY].is_string());
}

#[test]
fn members_of_compact_objects() {
    let m = object_members(br#"{"a":{"b":[1,"}"]},"c\"":"x,y","d":null}"#).unwrap();
    let keys: Vec<&[u8]> = m.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, [&b"\"a\""[..], b"\"c\\\"\"", b"\"d\""]);
    assert_eq!(m[0].1, br#"{"b":[1,"}"]}"#);
    assert_eq!(m[1].1, br#""x,y""#);
    assert_eq!(object_members(b"{}").unwrap().len(), 0);
    assert!(object_members(b"[1]").is_none());
    assert!(object_members(br#"{"a":[1}"#).is_none());
}

#[test]
fn errors_name_the_pointer() {
    let d = doc(
        json!({"openapi": "3.0.3", "paths": {"/x": {"get": {"parameters": [{"$ref": "#/components/parameters/Nope"}]}}}}),
    );
    let e = write_generic(&d).unwrap_err();
    assert!(
        matches!(&e, GenerateError::DanglingRef { pointer, .. } if pointer == "/paths/~1x/get/parameters/0"),
        "{e}"
    );
}

/// Whatever the input nests, the written document parses with serde_json
/// (which reads at most 127 nested arrays and objects), or the writer
/// refuses it with the pointer. Found by the `generate` fuzz target: a YAML
/// spec with a 128-level value gave an artifact serde_json refused.
#[test]
fn output_stays_readable_by_serde_json() {
    // The generic policy merges no path.
    let merged = MergedPaths::default();
    for levels in [100, 124, 125, 126, 127, 128] {
        let mut deep = json!(1);
        for _ in 0..levels {
            deep = json!([deep]);
        }
        let d = doc(json!({"openapi": "3.0.3", "paths": {}, "z": deep.clone()}));
        let cycles = Cycles::compute(&d);
        match write_document(&d, &cycles, &Limits::default(), &merged, "gen") {
            Ok(bytes) => {
                let parsed = serde_json::from_slice::<Value>(&bytes);
                assert!(parsed.is_ok(), "{levels}: {parsed:?}");
                assert!(levels < 126, "{levels} levels written");
            }
            Err(e) => {
                assert!(
                    matches!(&e, GenerateError::TooDeep { limit: READABLE_DEPTH, pointer, .. } if pointer.starts_with("/z/0/0")),
                    "{levels}: {e}"
                );
                assert!(levels >= 126, "{levels} refused: {e}");
            }
        }
        // serde_json values drop recursively: fine at this depth.
        drop(deep);
    }
    // Inlined deeper than written: a referenced example under a response.
    let mut deep = json!(1);
    for _ in 0..120 {
        deep = json!([deep]);
    }
    let d = doc(json!({
        "openapi": "3.0.3",
        "paths": {"/a": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"examples": {"e": {"$ref": "#/components/examples/E"}}}}}}}}},
        "components": {"examples": {"E": {"value": deep}}}
    }));
    let cycles = Cycles::compute(&d);
    match write_document(&d, &cycles, &Limits::default(), &merged, "gen") {
        Ok(bytes) => assert!(serde_json::from_slice::<Value>(&bytes).is_ok()),
        Err(e) => assert!(matches!(e, GenerateError::TooDeep { .. }), "{e}"),
    }
}

/// A chain of references that inlines deeper than a reader accepts (Stripe
/// and Azure's network specs do this) keeps its deepest reference a `$ref`
/// instead of refusing the whole document; the target stays in
/// `components`, so the reference resolves.
#[test]
fn too_deep_inlining_keeps_a_reference() {
    // The generic policy merges no path.
    let merged = MergedPaths::default();
    let mut schemas = serde_json::Map::new();
    for i in 0..100 {
        schemas.insert(
            format!("S{i}"),
            json!({"type": "object", "properties": {"next": {"$ref": format!("#/components/schemas/S{}", i + 1)}}}),
        );
    }
    schemas.insert("S100".into(), json!({"type": "string"}));
    let d = doc(json!({
        "openapi": "3.0.3",
        "paths": {"/a": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}}}}},
        "components": {"schemas": schemas}
    }));
    let cycles = Cycles::compute(&d);
    let bytes = write_document(&d, &cycles, &Limits::default(), &merged, "gen").unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let mut node =
        &v["paths"]["/a"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    let mut inlined = 0;
    while let Some(next) = node.get("properties").and_then(|p| p.get("next")) {
        node = next;
        inlined += 1;
    }
    let kept = node["$ref"].as_str().unwrap();
    assert!(inlined > 10 && inlined < 100, "{inlined} levels inlined");
    assert_eq!(kept, format!("#/components/schemas/S{inlined}"));
    assert!(
        v["components"]["schemas"]
            .get(&kept["#/components/schemas/".len()..])
            .is_some()
    );
}

/// A large schema with `n` properties (each a value or two).
fn wide(n: usize, tag: &str) -> Value {
    let props: Map<String, Value> = (0..n)
        .map(|i| (format!("{tag}{i}"), json!({"type": "string"})))
        .collect();
    json!({"type": "object", "properties": props})
}

/// Shared non-recursive entries are written once and referenced by marker;
/// everything whose expansion depends on where it appears is inlined.
#[test]
fn shared_entries_are_written_once_and_marked() {
    let ok = |schema: Value| json!({"200": {"description": "d", "content": {"application/json": {"schema": schema}}}});
    let r = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let d = doc(json!({
        "openapi": "3.0.3",
        "paths": {
            "/a": {"get": {"responses": ok(r("Zone"))}},
            "/b": {"get": {"responses": ok(r("Zone")), "parameters": [{"$ref": "#/components/parameters/Big"}]}},
            "/c": {"get": {"responses": ok(json!({"$ref": "#/components/schemas/Zone", "description": "beside"}))}},
            "/d": {"get": {"responses": ok(r("Tree"))}},
            "/e": {"get": {"responses": {"200": {"$ref": "#/components/responses/Zones"}}}},
            "/f": {"get": {"responses": ok(json!({"type": "array", "items": r("Small"),
                "example": {"$ref": "#/components/schemas/Zone"}}))}}
        },
        "components": {
            "schemas": {
                "Zone": wide(30, "z"),
                "List": {"type": "array", "items": r("Zone")},
                "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": r("Tree")}, "zone": r("Zone")}},
                "Small": {"type": "string"}
            },
            "parameters": {"Big": {"name": "q", "in": "query", "schema": wide(30, "p")}},
            "responses": {"Zones": {"description": "z", "content": {"application/json": {"schema": r("List")}}}}
        }
    }));
    let bytes = write_generic(&d).unwrap();
    let written: Value = serde_json::from_slice(&bytes).unwrap();
    let schema = |path: &str| {
        &written["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    };
    let marker = |p: &str| json!({INLINE_MARKER: p});
    assert_eq!(schema("/a"), &marker("#/components/schemas/Zone"));
    assert_eq!(schema("/b"), &marker("#/components/schemas/Zone"));
    assert_eq!(
        written["paths"]["/b"]["get"]["parameters"][0],
        marker("#/components/parameters/Big")
    );
    // Keys beside the `$ref`: inlined with them.
    assert_eq!(schema("/c")["description"], "beside");
    assert!(schema("/c")["properties"]["z29"].is_object());
    // Recursive: inlined with its `$circular` marker; the shared entry inside still marked.
    assert_eq!(
        schema("/d")["properties"]["kids"]["items"],
        json!({"$circular": "#/components/schemas/Tree"})
    );
    assert_eq!(
        schema("/d")["properties"]["zone"],
        marker("#/components/schemas/Zone")
    );
    // A response entry and the entries it reaches.
    assert_eq!(
        written["paths"]["/e"]["get"]["responses"]["200"],
        marker("#/components/responses/Zones")
    );
    assert_eq!(
        written["components"]["schemas"]["List"]["items"],
        marker("#/components/schemas/Zone")
    );
    // Small targets inline; `$ref` in example data is data.
    assert_eq!(schema("/f")["items"], json!({"type": "string"}));
    assert_eq!(
        schema("/f")["example"],
        json!({"$ref": "#/components/schemas/Zone"})
    );
    assert!(written["components"]["schemas"]["Zone"]["properties"]["z0"].is_object());
    assert_eq!(markers(&written), 8, "{written:#}");
    assert!(
        written[INLINE_REFS_KEY]
            .as_str()
            .unwrap()
            .starts_with("8 objects")
    );
    check_same(&d, PolicyKind::Generic);
    check_same(&d, PolicyKind::Cloudflare);
}

/// A spec that uses the marker key itself is inlined in full: its own
/// objects must not be read as markers.
#[test]
fn a_spec_holding_the_marker_key_is_inlined_in_full() {
    for clash in [
        json!({"x": {INLINE_MARKER: "#/components/schemas/Zone"}}),
        json!({INLINE_REFS_KEY: "mine"}),
        json!({"paths": {INLINE_MARKER: "#/components/schemas/Zone"}}),
        json!({"components": {"schemas": {"Zone": wide(30, "z"), INLINE_MARKER: {}}}}),
    ] {
        let mut root = json!({
            "openapi": "3.0.3",
            "paths": {
                "/a": {"get": {"responses": {"200": {"description": "d", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Zone"}}}}}}},
                "/b": {"get": {"responses": {"200": {"description": "d", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Zone"}}}}}}}
            },
            "components": {"schemas": {"Zone": wide(30, "z")}}
        });
        for (k, v) in clash.as_object().unwrap() {
            if k == "paths" {
                for (p, item) in v.as_object().unwrap() {
                    root["paths"][p] = item.clone();
                }
            } else {
                root[k] = v.clone();
            }
        }
        let d = doc(root);
        let bytes = write_generic(&d).unwrap();
        let written: Value = serde_json::from_slice(&bytes).unwrap();
        let note = written.get(INLINE_REFS_KEY).and_then(Value::as_str);
        assert!(note.is_none() || note == Some("mine"), "{written}");
        assert!(
            written["paths"]["/b"]["get"]["responses"]["200"]["content"]["application/json"]
                ["schema"]["properties"]["z0"]
                .is_object()
        );
        let mut expected = super::super::resolve_document(&d, &Limits::default()).unwrap();
        expected[GENERATED_KEY] = json!("gen");
        assert_eq!(
            serde_json::to_string(&written).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
    }
}

/// With shared references (a DAG too large to inline whole), targets that
/// are still inlined are deferred too, and the document reads as the one
/// written without markers: same kept `$ref`s, same inlined values.
#[test]
fn shared_documents_defer_what_they_inline() {
    let mut schemas = Map::new();
    for i in 0..40 {
        let next = json!({"$ref": format!("#/components/schemas/S{}", i + 1)});
        schemas.insert(
            format!("S{i}"),
            json!({"type": "object", "properties": {"a": next.clone(), "b": next, "w": {"$ref": "#/components/schemas/W"}}}),
        );
    }
    schemas.insert("S40".into(), json!({"type": "string", "enum": ["x"]}));
    schemas.insert("W".into(), wide(12, "w"));
    let d = doc(json!({
        "openapi": "3.0.3",
        "paths": {
            "/s": {"get": {"responses": {"200": {"description": "d", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}}}},
            "/w": {"get": {"responses": {"200": {"description": "d", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/W"}}}}}}}
        },
        "components": {"schemas": schemas}
    }));
    let cycles = Cycles::compute(&d);
    // The generic policy merges no path.
    let merged = MergedPaths::default();
    let max = Limits::default().max_nodes.saturating_mul(NODES_FACTOR);
    let write = |defer: bool| {
        let bytes = write_with(
            &d,
            &cycles,
            &Limits::default(),
            &merged,
            "g",
            false,
            defer,
            max,
        )
        .unwrap()
        .unwrap();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    };
    let marked = write(true);
    let plain = write(false);
    assert!(markers(&marked) > 40, "{}", markers(&marked));
    assert_eq!(markers(&plain), 0);
    assert_eq!(
        marked["paths"]["/w"]["get"]["responses"]["200"]["content"]["application/json"]["schema"],
        json!({INLINE_MARKER: "#/components/schemas/W"})
    );
    assert!(marked[SHARED_REFS_KEY].is_string());
    assert_eq!(
        serde_json::to_string(&read_markers(marked)).unwrap(),
        serde_json::to_string(&plain).unwrap()
    );
    // And `write_document` takes this path.
    let written = write_document(&d, &cycles, &Limits::default(), &merged, "g").unwrap();
    assert!(markers(&serde_json::from_slice(&written).unwrap()) > 40);
}
