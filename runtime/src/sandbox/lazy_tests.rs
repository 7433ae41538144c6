//! Tests of the lazily materialised `spec` ([`super::SpecIndex`]).

use super::*;
use rquickjs::{Context, Runtime};
use serde_json::json;

fn big_doc() -> Value {
    let long = "x".repeat(300);
    json!({
        "openapi": "3.0.3",
        "info": {"title": "t"},
        "paths": {
            "/zones": {"get": {"summary": "List zones", "tags": ["zones"], "description": long.clone(),
                "responses": {"200": {"description": long.clone()}}}},
            "/accounts": {"get": {"summary": "List accounts", "tags": ["accounts"], "__proto__": {"polluted": true},
                "responses": {"200": {"description": long}}}}
        },
        "list": [1, 2, {"deep": ["a".repeat(400)]}]
    })
}

fn eval_json(index: SpecIndex, code: &str) -> String {
    let index = Arc::new(index);
    let rt = Runtime::new().ok();
    let ctx = rt.as_ref().and_then(|rt| Context::full(rt).ok());
    let Some(ctx) = ctx else {
        return "no runtime".into();
    };
    ctx.with(|ctx| {
        let result: rquickjs::Result<String> = (|| {
            let spec = index.root_js(&ctx)?;
            ctx.globals().set("spec", spec)?;
            let v: JsValue = ctx.eval(code)?;
            Ok(ctx
                .json_stringify(v)?
                .map(|s| s.to_string())
                .transpose()?
                .unwrap_or_default())
        })();
        result.unwrap_or_else(|e| format!("error: {e}: {:?}", ctx.catch()))
    })
}

#[test]
fn small_documents_stay_inline() {
    let index = SpecIndex::from_value(json!({"a": [1, 2, 3], "b": "c"})).unwrap();
    assert_eq!(index.lazy_nodes(), 0);
    assert_eq!(eval_json(index, "spec"), r#"{"a":[1,2,3],"b":"c"}"#);
}

#[test]
fn lazy_document_reads_like_parsed_json() {
    let doc = big_doc();
    let expected = serde_json::to_string(&doc).unwrap_or_default();
    let index = SpecIndex::from_value(doc).unwrap();
    assert!(index.lazy_nodes() > 3, "{}", index.lazy_nodes());
    assert_eq!(eval_json(index, "spec"), expected);
}

#[test]
fn lookups_keys_and_identity() {
    let index = SpecIndex::from_value(big_doc()).unwrap();
    let out = eval_json(
        index,
        r#"({
            keys: Object.keys(spec.paths),
            summary: spec.paths["/zones"].get.summary,
            same: spec.paths === spec.paths,
            entries: Object.entries(spec.paths).map(([p, item]) => p + ":" + item.get.tags[0]),
            proto: Object.getPrototypeOf(spec.paths["/accounts"].get) === Object.prototype,
            own: Object.keys(spec.paths["/accounts"].get).includes("__proto__"),
            polluted: ({}).polluted === undefined,
            isArray: Array.isArray(spec.list) && spec.list.length === 3,
            deep: spec.list[2].deep[0].length,
        })"#,
    );
    assert_eq!(
        out,
        r#"{"keys":["/zones","/accounts"],"summary":"List zones","same":true,"entries":["/zones:zones","/accounts:accounts"],"proto":true,"own":true,"polluted":true,"isArray":true,"deep":400}"#
    );
}

#[test]
fn lazy_properties_can_be_overwritten_and_deleted() {
    let index = SpecIndex::from_value(big_doc()).unwrap();
    let out = eval_json(
        index,
        r#"(() => { spec.paths = 1; const a = spec.paths; delete spec.list; return [a, "list" in spec]; })()"#,
    );
    assert_eq!(out, "[1,false]");
}

/// A document with inline markers and the same document inlined.
fn marked_doc() -> (Value, Value) {
    let zone = json!({"type": "object", "description": "z".repeat(300),
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}}});
    let marker = |p: &str| json!({"x-toolforge-inline": p});
    let marked = json!({
        "openapi": "3.0.3",
        "paths": {
            "/zones": {"get": {"responses": {"200": {"schema": marker("#/components/schemas/Zone")}}}},
            "/zones/{id}": {"get": {"responses": {"200": {"schema": marker("#/components/schemas/Alias")}},
                "parameters": [marker("#/components/parameters/a~1b")]}}
        },
        "components": {
            "parameters": {"a/b": {"name": "id", "in": "path"}},
            "schemas": {"Zone": zone.clone(), "Alias": marker("#/components/schemas/Zone")}
        },
        "x-toolforge-inline-refs": "note",
        "x-toolforge-generated": "gen"
    });
    let inlined = json!({
        "openapi": "3.0.3",
        "paths": {
            "/zones": {"get": {"responses": {"200": {"schema": zone.clone()}}}},
            "/zones/{id}": {"get": {"responses": {"200": {"schema": zone.clone()}},
                "parameters": [{"name": "id", "in": "path"}]}}
        },
        "components": {
            "parameters": {"a/b": {"name": "id", "in": "path"}},
            "schemas": {"Zone": zone.clone(), "Alias": zone}
        },
        "x-toolforge-generated": "gen"
    });
    (marked, inlined)
}

#[test]
fn inline_markers_read_as_their_targets() {
    let (marked, inlined) = marked_doc();
    let index = SpecIndex::from_value(marked).unwrap();
    let expected = serde_json::to_string(&inlined).unwrap_or_default();
    assert_eq!(index.to_value(), inlined);
    assert_eq!(eval_json(index, "spec"), expected);
}

#[test]
fn each_occurrence_of_a_shared_target_is_its_own_object() {
    let (marked, _) = marked_doc();
    let index = SpecIndex::from_value(marked).unwrap();
    let out = eval_json(
        index,
        r#"(() => {
            const a = spec.paths["/zones"].get.responses["200"].schema;
            a.properties.id.type = "changed";
            a.extra = 1;
            const b = spec.components.schemas.Zone;
            const c = spec.paths["/zones/{id}"].get.responses["200"].schema;
            return [a === b, b.properties.id.type, "extra" in b, c.properties.id.type, "x-toolforge-inline-refs" in spec];
        })()"#,
    );
    assert_eq!(out, r#"[false,"string",false,"string",false]"#);
}

#[test]
fn markers_are_data_without_the_root_key() {
    let (mut marked, _) = marked_doc();
    if let Some(root) = marked.as_object_mut() {
        root.shift_remove("x-toolforge-inline-refs");
    }
    let expected = serde_json::to_string(&marked).unwrap_or_default();
    let index = SpecIndex::from_value(marked).unwrap();
    assert_eq!(eval_json(index, "spec"), expected);
}

#[test]
fn unresolvable_markers_are_errors() {
    let doc = |components: Value, target: &str| {
        json!({"paths": {"/a": {"x": {"x-toolforge-inline": target}}},
            "components": components, "x-toolforge-inline-refs": "n"})
    };
    let missing = SpecIndex::from_value(doc(json!({}), "#/components/schemas/Nope"));
    assert!(missing.unwrap_err().contains("names nothing"));
    let not_a_pointer = SpecIndex::from_value(doc(json!({}), "components"));
    assert!(not_a_pointer.is_err());
    let root = json!({"x-toolforge-inline": "#/a", "x-toolforge-inline-refs": "n"});
    assert!(SpecIndex::from_value(root).unwrap_err().contains("root"));
    let looped = doc(
        json!({"schemas": {
            "A": {"x-toolforge-inline": "#/components/schemas/B"},
            "B": {"x-toolforge-inline": "#/components/schemas/A"}}}),
        "#/components/schemas/A",
    );
    assert!(SpecIndex::from_value(looped).unwrap_err().contains("chain"));
    let through = doc(
        json!({"schemas": {"A": {"x-toolforge-inline": "#/components/schemas/B"}, "B": {"c": 1}}}),
        "#/components/schemas/A/c",
    );
    assert!(
        SpecIndex::from_value(through)
            .unwrap_err()
            .contains("another marker")
    );
    // Into a small inline value, and an array element.
    let small = doc(
        json!({"schemas": {"S": {"enum": [{"k": "v"}]}}}),
        "#/components/schemas/S/enum/0",
    );
    let index = SpecIndex::from_value(small).unwrap();
    assert_eq!(eval_json(index, "spec.paths['/a'].x"), r#"{"k":"v"}"#);
}

#[test]
fn odd_strings_numbers_and_keys_read_like_parsed_json() {
    let doc = json!({
        "long": "x".repeat(300),
        "small": {"q": "\"quoted\" \\ back\nslash", "u": "\u{2028}é😀\u{0}", "__proto__": {"p": 1}},
        "numbers": [0, -0.0, 1.5, 1e300, -9223372036854775808_i64, 18446744073709551615_u64, 2147483648_u64],
        "flags": [true, false, null],
        "nested": {"deep": {"long": "y".repeat(300), "k": [1, {"a": "b"}]}},
    });
    let text = serde_json::to_string(&doc).unwrap_or_default();
    let index = SpecIndex::from_value(doc.clone()).unwrap();
    assert!(index.lazy_nodes() >= 2, "{}", index.lazy_nodes());
    assert_eq!(index.to_value(), doc);
    // Read in QuickJS, the spec is what JSON.parse makes of the text.
    let code = format!(
        "JSON.stringify(spec) === JSON.stringify(JSON.parse({})) && Object.keys(spec.small).includes('__proto__') && Object.is(spec.numbers[1], -0)",
        Value::from(text)
    );
    assert_eq!(eval_json(index, &code), "true");
}

#[test]
fn invalid_json_is_an_error() {
    assert!(SpecIndex::from_json("{").is_err());
    let ok = SpecIndex::from_json("[1]").map(|i| i.source_bytes());
    assert_eq!(ok, Ok(3));
}

/// A document whose `wide` object has many lazy keys, with a lazy `"0"` key
/// next to a lazy array element 0 (accessors are shared per position).
fn wide_doc() -> Value {
    let long = |s: &str| json!({"text": s.repeat(300)});
    let mut wide = Map::new();
    for i in (0..20).rev() {
        wide.insert(format!("k{i:02}"), long(&format!("{i}")));
    }
    wide.insert("0".into(), long("zero"));
    json!({"wide": wide, "list": [long("a"), long("b")]})
}

#[test]
fn shared_accessors_find_their_own_child() {
    let index = SpecIndex::from_value(wide_doc()).unwrap();
    let out = eval_json(
        index,
        r#"(() => {
            const w = spec.wide;
            const keys = Object.keys(w);
            const ok = keys.every((k) => k === "0" ? w[k].text.startsWith("zero")
                : w[k].text.startsWith(String(Number(k.slice(1)))));
            return [keys.length, ok, spec.list[0].text[0], spec.list[1].text[0], w["0"].text.slice(0, 4)];
        })()"#,
    );
    assert_eq!(out, r#"[21,true,"a","b","zero"]"#);
}

#[test]
fn inherited_and_detached_reads_behave_like_data() {
    let index = SpecIndex::from_value(wide_doc()).unwrap();
    let out = eval_json(
        index,
        r#"(() => {
            const w = spec.wide;
            const child = Object.create(w);
            const inherited = child.k03.text.slice(0, 1);
            const get = Object.getOwnPropertyDescriptor(w, "k04").get;
            const detached = [get.call({}), get.call(null), get.call(1)];
            return [inherited, Object.keys(child).length, detached, w.k04.text.slice(0, 1)];
        })()"#,
    );
    assert_eq!(out, r#"["3",1,[null,null,null],"4"]"#);
}

#[test]
fn strict_code_can_assign_lazy_properties() {
    let index = SpecIndex::from_value(wide_doc()).unwrap();
    let out = eval_json(
        index,
        r#"(() => { "use strict"; spec.wide.k01 = 5; spec.list[0] = 6; return [spec.wide.k01, spec.list[0], spec.wide.k02.text[0]]; })()"#,
    );
    assert_eq!(out, r#"[5,6,"2"]"#);
}

/// Attack: the sandboxed code patches the builtins the accessors use
/// (`Map.prototype.get`, `Reflect`, `Object.getPrototypeOf`) to steer a
/// getter to another node; the getters keep reading their own child.
#[test]
fn patched_builtins_cannot_steer_the_getters() {
    let index = SpecIndex::from_value(wide_doc()).unwrap();
    let out = eval_json(
        index,
        r#"(() => {
            const w = spec.wide;
            Map.prototype.get = () => 0;
            Map.prototype.set = () => { throw new Error("set"); };
            Reflect.getPrototypeOf = () => null;
            Reflect.defineProperty = () => false;
            Object.getPrototypeOf = () => null;
            return [w.k07.text[0], spec.list[1].text[0], Object.keys(w.k08)];
        })()"#,
    );
    assert_eq!(out, r#"["7","b",["text"]]"#);
}
