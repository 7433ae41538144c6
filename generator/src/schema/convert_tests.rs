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
/// "input" | "output", "components": {…}?, "schema": …}`) and the
/// converter's answer `NAME.output.json` (`{"schema": …, "$defs": {…}?}`).
const FIXTURES: &str = "tests/fixtures/schema";

/// Every fixture pair converts to its expected output, which is a valid
/// 2020-12 schema; `TOOLFORGE_BLESS=1` writes the outputs instead.
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
        let input: Value =
            serde_json::from_str(&std::fs::read_to_string(&input_path).unwrap()).unwrap();
        let mode = match input["mode"].as_str() {
            Some("output") => SchemaMode::Output,
            _ => SchemaMode::Input,
        };
        let d = doc(input.get("components").cloned().unwrap_or(json!({})));
        let (schema, defs) = convert_in(&d, mode, &input["schema"]).unwrap();
        assert_valid_2020_12(&schema, &defs);
        let mut got = Map::new();
        got.insert("schema".into(), schema);
        if !defs.is_empty() {
            got.insert("$defs".into(), Value::Object(defs));
        }
        let got = Value::Object(got);
        let name = input_path
            .to_string_lossy()
            .replace(".input.json", ".output.json");
        let output_path = std::path::PathBuf::from(name);
        if bless {
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&output_path, text).unwrap();
            continue;
        }
        // Compared as text: member order (property order) is part of the output.
        let want = std::fs::read_to_string(&output_path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run with TOOLFORGE_BLESS=1",
                output_path.display()
            )
        });
        let got = serde_json::to_string_pretty(&got).unwrap() + "\n";
        assert_eq!(got, want, "{}", input_path.display());
    }
}

#[test]
fn nullable_forms() {
    // The plain nullable forms are fixture pairs (`tests/fixtures/schema/nullable_*`);
    // this one also checks what the converted schema accepts.
    let d = doc(json!({"Pet": {"type": "object", "properties": {"n": {"type": "string"}}}}));
    let (out, _) = convert_in(
        &d,
        SchemaMode::Input,
        &json!({"$ref": "#/components/schemas/Pet", "nullable": true, "description": "maybe a pet"}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"type": ["object", "null"], "properties": {"n": {"type": "string"}}, "description": "maybe a pet"})
    );
    let validator = jsonschema::draft202012::new(&out).unwrap();
    assert!(validator.is_valid(&json!(null)));
    assert!(validator.is_valid(&json!({"n": "x"})));
    assert!(!validator.is_valid(&json!({"n": 1})));
}

#[test]
fn inlines_plain_refs_deterministically() {
    let d = doc(json!({
        "Name": {"type": "string", "description": "a name", "example": "x"},
        "Pet": {"type": "object", "properties": {"name": {"$ref": "#/components/schemas/Name"}, "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Name"}}}},
        "Alias": {"$ref": "#/components/schemas/Pet"}
    }));
    let (out, defs) = convert_in(
        &d,
        SchemaMode::Input,
        &json!({"$ref": "#/components/schemas/Alias", "description": "over"}),
    )
    .unwrap();
    assert!(defs.is_empty());
    assert_eq!(
        out,
        json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "a name"},
            "tags": {"type": "array", "items": {"type": "string", "description": "a name"}}
        }, "description": "over"})
    );
    let again = convert_in(
        &d,
        SchemaMode::Input,
        &json!({"$ref": "#/components/schemas/Alias", "description": "over"}),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&again.0).unwrap(),
        serde_json::to_string(&out).unwrap()
    );
}

#[test]
fn self_recursive_schema_uses_defs() {
    let d = doc(json!({
        "Tree": {"type": "object", "required": ["value"], "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}},
            "parent": {"$ref": "#/components/schemas/Tree", "nullable": true}
        }}
    }));
    let (out, defs) = convert_in(
        &d,
        SchemaMode::Input,
        &json!({"$ref": "#/components/schemas/Tree"}),
    )
    .unwrap();
    assert_eq!(out["type"], "object");
    assert_eq!(
        out["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Tree"})
    );
    assert_eq!(
        out["properties"]["parent"],
        json!({"anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}]})
    );
    assert_eq!(defs.keys().collect::<Vec<_>>(), ["Tree"]);
    assert_eq!(
        defs["Tree"]["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Tree"})
    );
    let full = assert_valid_2020_12(&out, &defs);
    let v = jsonschema::draft202012::new(&full).unwrap();
    assert!(v.is_valid(
        &json!({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}], "parent": null})
    ));
    assert!(
        !v.is_valid(&json!({"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]}))
    );
    assert!(super::super::object_shape(&out).is_some());
}

#[test]
fn mutually_recursive_schemas_use_defs() {
    let d = doc(json!({
        "Person": {"type": "object", "properties": {"name": {"type": "string"}, "employer": {"$ref": "#/components/schemas/Company"}}},
        "Company": {"type": "object", "properties": {"ceo": {"$ref": "#/components/schemas/Person"}, "staff": {"type": "array", "items": {"$ref": "#/components/schemas/Person"}}}},
        "Wrapper": {"type": "object", "properties": {"p": {"$ref": "#/components/schemas/Person"}}}
    }));
    let (out, defs) = convert_in(
        &d,
        SchemaMode::Output,
        &json!({"$ref": "#/components/schemas/Wrapper"}),
    )
    .unwrap();
    assert_eq!(out["properties"]["p"], json!({"$ref": "#/$defs/Person"}));
    assert_eq!(defs.keys().collect::<Vec<_>>(), ["Company", "Person"]);
    assert_eq!(
        defs["Person"]["properties"]["employer"],
        json!({"$ref": "#/$defs/Company"})
    );
    assert_eq!(
        defs["Company"]["properties"]["ceo"],
        json!({"$ref": "#/$defs/Person"})
    );
    let full = assert_valid_2020_12(&out, &defs);
    let v = jsonschema::draft202012::new(&full).unwrap();
    assert!(v.is_valid(
        &json!({"p": {"name": "a", "employer": {"ceo": {"name": "b"}, "staff": [{"name": "c"}]}}})
    ));
    assert!(!v.is_valid(&json!({"p": {"employer": {"ceo": {"name": 5}}}})));
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
fn def_names_are_sanitised_and_unique() {
    let d = doc(json!({
        "Foo Bar": {"properties": {"next": {"$ref": "#/components/schemas/Foo Bar"}}},
        "Foo_Bar": {"properties": {"next": {"$ref": "#/components/schemas/Foo_Bar"}}},
        "a/b": {"items": {"$ref": "#/components/schemas/a~1b"}},
        "": {"items": {"$ref": "#/components/schemas/"}}
    }));
    let schema = json!({"properties": {
        "x": {"$ref": "#/components/schemas/Foo Bar"},
        "y": {"$ref": "#/components/schemas/Foo_Bar"},
        "z": {"$ref": "#/components/schemas/a~1b"},
        "w": {"$ref": "#/components/schemas/"}
    }});
    let (out, defs) = convert_in(&d, SchemaMode::Input, &schema).unwrap();
    assert_eq!(
        defs.keys().collect::<Vec<_>>(),
        ["Foo_Bar", "Foo_Bar_2", "a_b", "schema"]
    );
    assert_eq!(out["properties"]["y"], json!({"$ref": "#/$defs/Foo_Bar_2"}));
    assert_valid_2020_12(&out, &defs);
}

#[test]
fn malformed_schemas_are_invalid_with_pointer() {
    let d = doc(json!({"Bad": {"type": "object", "properties": {"a": {"required": "a"}}}}));
    let cases = [
        (json!(42), "/s"),
        (json!({"properties": []}), "/s/properties"),
        (json!({"required": [1]}), "/s/required"),
        (json!({"type": "int"}), "/s/type"),
        (json!({"type": []}), "/s/type"),
        (json!({"$ref": 7}), "/s/$ref"),
        (json!({"minLength": -1}), "/s/minLength"),
        (json!({"multipleOf": 0}), "/s/multipleOf"),
        (json!({"items": [{}]}), "/s/items"),
        (json!({"allOf": {}}), "/s/allOf"),
        (json!({"enum": "a"}), "/s/enum"),
        (json!({"pattern": 1}), "/s/pattern"),
        (json!({"maximum": "1"}), "/s/maximum"),
        (json!({"uniqueItems": "yes"}), "/s/uniqueItems"),
        (json!({"properties": {"p": "x"}}), "/s/properties/p"),
        (
            json!({"$ref": "#/components/schemas/Bad"}),
            "/components/schemas/Bad/properties/a/required",
        ),
    ];
    let cycles = Cycles::compute(&d);
    for (schema, pointer) in cases {
        let mut conv = SchemaConverter::new(&d, &cycles, SchemaMode::Input, Limits::default());
        let e = conv.convert(&schema, "/s").unwrap_err();
        match &e {
            GenerateError::Invalid {
                pointer: p, file, ..
            } => {
                assert_eq!(p, pointer, "{schema}: {e}");
                assert_eq!(file, "spec.yaml");
            }
            _ => panic!("{schema}: {e}"),
        }
    }
}

#[test]
fn reference_errors() {
    let d = doc(json!({
        "Loop1": {"$ref": "#/components/schemas/Loop2"},
        "Loop2": {"$ref": "#/components/schemas/Loop1"}
    }));
    let e = convert_in(
        &d,
        SchemaMode::Input,
        &json!({"properties": {"a": {"$ref": "#/components/schemas/Nope"}}}),
    )
    .unwrap_err();
    assert!(
        matches!(&e, GenerateError::DanglingRef { pointer, .. } if pointer.ends_with("/schema/properties/a")),
        "{e}"
    );
    let e = convert_in(&d, SchemaMode::Input, &json!({"$ref": "common.yaml#/Pet"})).unwrap_err();
    assert!(matches!(e, GenerateError::RemoteRef { .. }), "{e}");
    let e = convert_in(
        &d,
        SchemaMode::Input,
        &json!({"$ref": "#/components/schemas/Loop1"}),
    )
    .unwrap_err();
    assert!(e.to_string().contains("$ref loop"), "{e}");
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
