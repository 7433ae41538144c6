//! Tests of [`SchemaConverter`] (kept next to `convert.rs`).

use serde_json::{Map, Value, json};

use super::*;
use crate::schema::drop_deep;

fn doc(schemas: Value) -> Document {
    Document {
        root: json!({"openapi": "3.0.3", "paths": {}, "components": {"schemas": schemas}}),
        file: "spec.yaml".into(),
        openapi_version: "3.0.3".into(),
    }
}

/// Converts `schema` with no elision budget (so the hard limits apply).
fn convert_unbudgeted(d: &Document, schema: &Value) -> Result<Value> {
    let cycles = Cycles::compute(d);
    let mut conv = SchemaConverter::new(d, &cycles, SchemaMode::Input, Limits::default())
        .with_budget(usize::MAX);
    conv.convert(
        schema,
        "/paths/~1x/post/requestBody/content/application~1json/schema",
    )
}

/// Converts `schema` and returns (schema, defs).
fn convert_in(
    d: &Document,
    mode: SchemaMode,
    schema: &Value,
) -> Result<(Value, Map<String, Value>)> {
    let cycles = Cycles::compute(d);
    let mut conv = SchemaConverter::new(d, &cycles, mode, Limits::default());
    let out = conv.convert(
        schema,
        "/paths/~1x/post/requestBody/content/application~1json/schema",
    )?;
    Ok((out, conv.into_defs()))
}

/// The tool schema (with `$defs`) is valid against the 2020-12 meta-schema
/// and compiles (every `$defs` reference resolves).
pub(crate) fn assert_valid_2020_12(schema: &Value, defs: &Map<String, Value>) -> Value {
    let mut full = schema.clone();
    if !defs.is_empty() {
        if let Value::Object(map) = &mut full {
            map.insert("$defs".into(), Value::Object(defs.clone()));
        } else {
            full = json!({"allOf": [full], "$defs": defs});
        }
    }
    if let Err(e) = jsonschema::draft202012::meta::validate(&full) {
        panic!("not a valid 2020-12 schema: {e}\n{full:#}");
    }
    if let Err(e) = jsonschema::draft202012::new(&full) {
        panic!("does not compile: {e}\n{full:#}");
    }
    full
}

/// Where the schema fixture pairs are: `NAME.input.json` (`{"mode":
/// "input" | "output", "components": {…}?, "schema": …}`, optionally
/// `"valid"` and `"invalid"`: instances the converted schema must accept
/// and refuse, and `"object_shape": true`: it flattens into arguments)
/// and the converter's answer `NAME.output.json` (`{"schema": …, "$defs":
/// {…}?}`, or `{"error": {"kind": "<GenerateError variant>", "text":
/// "<as displayed>"}}` for an input it refuses).
const FIXTURES: &str = "tests/fixtures/schema";

/// What converting one fixture input gives, as its output file holds it,
/// and the whole converted schema (with `$defs`) when it converts.
fn fixture_output(input: &Value) -> (Value, Option<Value>) {
    let mode = match input["mode"].as_str() {
        Some("output") => SchemaMode::Output,
        _ => SchemaMode::Input,
    };
    let d = doc(input.get("components").cloned().unwrap_or(json!({})));
    let (schema, defs) = match convert_in(&d, mode, &input["schema"]) {
        Ok(converted) => converted,
        Err(e) => {
            let error = json!({"kind": e.kind(), "text": e.to_string()});
            return (json!({ "error": error }), None);
        }
    };
    let full = assert_valid_2020_12(&schema, &defs);
    let mut got = Map::new();
    got.insert("schema".into(), schema);
    if !defs.is_empty() {
        got.insert("$defs".into(), Value::Object(defs));
    }
    (Value::Object(got), Some(full))
}

/// Every fixture pair converts to its expected output (the same text on a
/// second conversion), which is a valid 2020-12 schema accepting and
/// refusing the input's instances; `TOOLFORGE_BLESS=1` writes the outputs
/// instead.
#[test]
fn schema_fixture_pairs() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURES);
    let bless = std::env::var_os("TOOLFORGE_BLESS").is_some_and(|v| v == "1");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".input.json"))
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no fixtures in {}", dir.display());
    for input_path in inputs {
        let shown = input_path.display();
        let input: Value =
            serde_json::from_str(&std::fs::read_to_string(&input_path).unwrap()).unwrap();
        let (got, full) = fixture_output(&input);
        let got = serde_json::to_string_pretty(&got).unwrap() + "\n";
        let again = serde_json::to_string_pretty(&fixture_output(&input).0).unwrap() + "\n";
        assert_eq!(got, again, "{shown}: a second conversion differs");
        if let Some(full) = &full {
            let v = jsonschema::draft202012::new(full).unwrap();
            for instance in input["valid"].as_array().into_iter().flatten() {
                assert!(v.is_valid(instance), "{shown}: refuses {instance}");
            }
            for instance in input["invalid"].as_array().into_iter().flatten() {
                assert!(!v.is_valid(instance), "{shown}: accepts {instance}");
            }
            if input["object_shape"] == json!(true) {
                assert!(super::super::object_shape(full).is_some(), "{shown}");
            }
        } else {
            assert!(input.get("valid").is_none(), "{shown}: refused, yet has instances");
        }
        let name = input_path
            .to_string_lossy()
            .replace(".input.json", ".output.json");
        let output_path = std::path::PathBuf::from(name);
        if bless {
            std::fs::write(&output_path, got).unwrap();
            continue;
        }
        // Compared as text: member order (property order) is part of the output.
        let want = std::fs::read_to_string(&output_path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run with TOOLFORGE_BLESS=1",
                output_path.display()
            )
        });
        assert_eq!(got, want, "{shown}");
    }
}

#[test]
fn cycles_through_non_component_pointers_fall_back_to_defs() {
    let mut d = doc(
        json!({"Holder": {"type": "object", "properties": {"body": {"$ref": "#/paths/~1x/post/requestBody/content/application~1json/schema"}}}}),
    );
    d.root["paths"] = json!({"/x": {"post": {"requestBody": {"content": {"application/json": {"schema": {
        "type": "object", "properties": {"holder": {"$ref": "#/components/schemas/Holder"}}
    }}}}}}});
    let cycles = Cycles::compute(&d);
    // Pretend Cycles missed it: use an empty analysis to exercise the branch guard.
    let none = Cycles::default();
    for c in [&cycles, &none] {
        let mut conv = SchemaConverter::new(&d, c, SchemaMode::Input, Limits::default());
        let out = conv
            .convert(&json!({"$ref": "#/components/schemas/Holder"}), "/x")
            .unwrap();
        let defs = conv.into_defs();
        assert!(!defs.is_empty());
        for name in defs.keys() {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
                "{name}"
            );
        }
        assert_valid_2020_12(&out, &defs);
    }
    assert_eq!(
        def_base_name("/paths/~1x/post/requestBody/content/application~1json/schema"),
        "paths._1x.post.requestBody.content.application_1json.schema"
    );
}

#[test]
fn deep_nesting_is_too_deep_not_a_crash() {
    let schema = crate::schema::nest_for_tests(json!({"type": "string"}), 10_000);
    let d = doc(json!({}));
    let e = convert_in(&d, SchemaMode::Input, &schema).unwrap_err();
    match &e {
        GenerateError::TooDeep { pointer, limit, .. } => {
            assert_eq!(*limit, 64);
            assert!(pointer.ends_with("/properties/a"), "{pointer}");
        }
        _ => panic!("{e}"),
    }
    drop_deep(schema);
    let mut default = json!(1);
    for _ in 0..10_000 {
        default = Value::Array(vec![default]);
    }
    let mut schema = Map::new();
    schema.insert("default".into(), default);
    let schema = Value::Object(schema);
    let e = convert_in(&d, SchemaMode::Input, &schema).unwrap_err();
    assert!(
        matches!(e, GenerateError::TooDeep { limit: 128, .. }),
        "{e}"
    );
    drop_deep(schema);
}

/// With the elision budget off (the default budget elides these), the
/// depth bound still holds.
#[test]
fn deep_ref_chains_are_too_deep() {
    let mut schemas = Map::new();
    for i in 0..10_000 {
        schemas.insert(
            format!("S{i}"),
            json!({"type": "object", "properties": {"next": {"$ref": format!("#/components/schemas/S{}", i + 1)}}}),
        );
    }
    schemas.insert("S10000".into(), json!({"type": "string"}));
    let d = doc(Value::Object(schemas));
    let e = convert_unbudgeted(&d, &json!({"$ref": "#/components/schemas/S0"})).unwrap_err();
    assert!(
        matches!(&e, GenerateError::TooDeep { pointer, .. } if pointer.starts_with("/components/schemas/S")),
        "{e}"
    );
}

#[test]
fn exponential_expansion_is_too_large() {
    let mut schemas = Map::new();
    for i in 0..25 {
        let next = json!({"$ref": format!("#/components/schemas/S{}", i + 1)});
        schemas.insert(
            format!("S{i}"),
            json!({"type": "object", "properties": {"a": next.clone(), "b": next}}),
        );
    }
    schemas.insert("S25".into(), json!({"type": "string"}));
    let d = doc(Value::Object(schemas));
    let e = convert_unbudgeted(&d, &json!({"$ref": "#/components/schemas/S0"})).unwrap_err();
    assert!(
        matches!(e, GenerateError::TooLarge { limit: 200_000, .. }),
        "{e}"
    );
}

#[test]
fn normalised_31_schemas_convert_to_valid_2020_12() {
    let mut root = json!({"openapi": "3.1.0", "components": {"schemas": {
        "S": {
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"], "examples": ["x"]},
                "b": {"const": "fixed"},
                "c": {"type": "number", "exclusiveMinimum": 0},
                "d": {"type": ["integer", "string"]},
                "e": {"$ref": "#/components/schemas/E", "description": "an e", "maxLength": 3},
                "f": {"type": "string", "contentEncoding": "base64"},
                "g": {"type": "null"}
            }
        },
        "E": {"type": "string"}
    }}});
    crate::normalise::to_openapi_30(&mut root);
    let d = Document {
        root,
        file: "a.json".into(),
        openapi_version: "3.1.0".into(),
    };
    let (out, _) = convert_in(
        &d,
        SchemaMode::Input,
        &json!({"$ref": "#/components/schemas/S"}),
    )
    .unwrap();
    let p = &out["properties"];
    assert_eq!(p["a"], json!({"type": ["string", "null"]}));
    assert_eq!(p["b"], json!({"enum": ["fixed"]}));
    assert_eq!(p["c"], json!({"type": "number", "exclusiveMinimum": 0}));
    assert_eq!(
        p["d"],
        json!({"anyOf": [{"type": "integer"}, {"type": "string"}]})
    );
    assert_eq!(
        p["e"],
        json!({"description": "an e", "allOf": [{"type": "string"}, {"maxLength": 3}]})
    );
    assert_eq!(p["f"], json!({"type": "string", "format": "byte"}));
    assert_eq!(p["g"], json!({"enum": [null]}));
    assert_valid_2020_12(&out, &Map::new());
}

#[test]
fn dag_shaped_output_schemas_are_bounded() {
    let mut schemas = Map::new();
    for i in 0..30 {
        let next = json!({"$ref": format!("#/components/schemas/S{}", i + 1)});
        schemas.insert(
            format!("S{i}"),
            json!({"type": "object", "description": format!("level {i}"), "properties": {"a": next.clone(), "b": next}}),
        );
    }
    schemas.insert("S30".into(), json!({"type": "string"}));
    let d = doc(Value::Object(schemas));
    let r = json!({"$ref": "#/components/schemas/S0"});
    let cycles = Cycles::compute(&d);
    let budgeted = |mode, budget| {
        let mut conv =
            SchemaConverter::new(&d, &cycles, mode, Limits::default()).with_budget(budget);
        let out = conv.convert(&r, "/x").unwrap();
        (out, conv.into_defs())
    };
    let (out, defs) = budgeted(SchemaMode::Output, crate::schema::OUTPUT_BUDGET);
    assert!(defs.is_empty());
    let text = serde_json::to_string(&out).unwrap();
    assert!(text.len() < 2_000_000, "{}", text.len());
    assert_eq!(
        out["properties"]["a"],
        json!({"type": "object", "description": "level 1 (schema `S1`, not expanded here)"})
    );
    let (input, _) = budgeted(SchemaMode::Input, crate::schema::INPUT_BUDGET);
    assert!(serde_json::to_string(&input).unwrap().len() < 2_000_000);
    // Without a budget (the default) the size bound refuses it.
    let e = convert_in(&d, SchemaMode::Input, &r).unwrap_err();
    assert!(matches!(e, GenerateError::TooLarge { .. }), "{e}");
}

#[test]
fn input_all_of_members_stay_expanded_past_the_budget() {
    // Microsoft Graph's shape: bodies are `allOf` chains down to a base
    // whose discriminator mapping (data the converter drops) makes its
    // estimated size exceed the budget.
    let mapping: Map<String, Value> = (0..500)
        .map(|i| {
            (
                format!("#t{i}"),
                json!(format!("#/components/schemas/T{i}")),
            )
        })
        .collect();
    let d = doc(json!({
        "Entity": {"type": "object", "discriminator": {"propertyName": "@odata.type", "mapping": mapping},
                   "properties": {"id": {"type": "string"}, "@odata.type": {"type": "string"}}},
        "Base": {"allOf": [{"$ref": "#/components/schemas/Entity"},
                           {"type": "object", "properties": {"name": {"type": "string"},
                                                             "owner": {"$ref": "#/components/schemas/Entity"}}}]},
        "Derived": {"allOf": [{"$ref": "#/components/schemas/Base"},
                              {"type": "object", "properties": {"size": {"type": "integer"}}}]}
    }));
    let r = json!({"$ref": "#/components/schemas/Derived"});
    let cycles = Cycles::compute(&d);
    assert!(cycles.expanded_size("/components/schemas/Entity").unwrap() > 100);
    let convert = |mode| {
        let mut conv = SchemaConverter::new(&d, &cycles, mode, Limits::default()).with_budget(100);
        conv.convert(&r, "/x").unwrap()
    };
    let input = convert(SchemaMode::Input);
    let shape = crate::schema::object_shape(&input).expect("the body stays a flattenable object");
    let names: Vec<&str> = shape.properties.keys().map(String::as_str).collect();
    assert_eq!(names, ["id", "@odata.type", "name", "owner", "size"]);
    // Only the members are kept whole: a property naming the base is not.
    let owner = &shape.properties["owner"];
    assert!(owner.get("properties").is_none(), "{owner}");
    // Output schemas keep eliding (they stay sound either way).
    let output = convert(SchemaMode::Output);
    let first = &output["allOf"][0]["allOf"][0];
    assert!(first.get("properties").is_none(), "{first}");
}
