//! Hostile and broken specs give typed errors (never a panic or a stack
//! overflow), and the loader → normaliser → converter → resolver chain
//! behaves on real input. Every test runs on a normal 2 MB test thread.

// Helpers outside `#[test]` functions count as non-test code for clippy.
#![allow(clippy::panic, clippy::unwrap_used)]

mod common;

use std::time::Instant;

use serde_json::{Map, Value, json};
use toolforge_generator::GenerateError;
use toolforge_generator::emit::resolved::resolve_document;
use toolforge_generator::load::{Document, load};
use toolforge_generator::refs::resolve_ref;
use toolforge_generator::schema::{Cycles, Limits, SchemaConverter, SchemaMode, object_shape};

/// Converts the schema at `pointer` of `doc`; returns (schema, defs).
fn convert(
    doc: &Document,
    mode: SchemaMode,
    pointer: &str,
) -> Result<(Value, Map<String, Value>), GenerateError> {
    let cycles = Cycles::compute(doc);
    let mut conv = SchemaConverter::new(doc, &cycles, mode, Limits::default());
    let (schema, at) = resolve_ref(doc, &format!("#{pointer}"), "")?;
    let out = conv.convert(schema, &at)?;
    Ok((out, conv.into_defs()))
}

/// The schema with its `$defs` attached, checked against the 2020-12
/// meta-schema and compiled (every `$defs` reference resolves).
fn assert_valid_2020_12(schema: &Value, defs: &Map<String, Value>) -> Value {
    let mut full = schema.clone();
    if !defs.is_empty() {
        match &mut full {
            Value::Object(map) => {
                map.insert("$defs".into(), Value::Object(defs.clone()));
            }
            _ => full = json!({"allOf": [full], "$defs": defs}),
        }
    }
    if let Err(e) = jsonschema::draft202012::meta::validate(&full) {
        panic!("not a valid 2020-12 schema: {e}\n{full:#}");
    }
    if let Err(e) = jsonschema::draft202012::new(&full) {
        panic!("does not compile: {e}");
    }
    full
}

fn load_str(text: &str, file: &str) -> Document {
    match load(text.as_bytes(), file) {
        Ok(doc) => doc,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn swagger_2_is_refused_with_a_clear_message() {
    let e = load(
        include_bytes!("fixtures/bad/swagger2.yaml"),
        "swagger2.yaml",
    )
    .unwrap_err();
    assert!(
        matches!(&e, GenerateError::Swagger2 { version, .. } if version == "2.0"),
        "{e}"
    );
    let message = e.to_string();
    assert!(
        message.starts_with("swagger2.yaml: Swagger 2.0"),
        "{message}"
    );
    assert!(message.contains("convert it to OpenAPI 3"), "{message}");
    let e = load(br#"{"swagger": "2.0", "paths": {}}"#, "s.json").unwrap_err();
    assert!(matches!(e, GenerateError::Swagger2 { .. }), "{e}");
}

#[test]
fn invalid_yaml_is_a_syntax_error_with_a_line() {
    let e = load(include_bytes!("fixtures/bad/invalid.yaml"), "invalid.yaml").unwrap_err();
    assert!(matches!(e, GenerateError::Syntax { .. }), "{e}");
    let message = e.to_string();
    assert!(message.starts_with("invalid.yaml: "), "{message}");
    assert!(message.contains("line 9"), "{message}");
    let e = load(b"{\"openapi\": \"3.0.3\",\n\"paths\": }", "bad.json").unwrap_err();
    assert!(e.to_string().contains("line 2 column"), "{e}");
}

#[test]
fn missing_openapi_field_is_not_openapi() {
    let e = load(b"info: {title: t, version: '1'}\npaths: {}\n", "x.yaml").unwrap_err();
    assert!(
        matches!(&e, GenerateError::NotOpenApi { pointer, .. } if pointer == "/openapi"),
        "{e}"
    );
}

#[test]
fn dangling_and_remote_refs_are_typed() {
    let doc = load(include_bytes!("fixtures/bad/refs.yaml"), "refs.yaml").unwrap();
    let media = |path: &str| {
        format!(
            "/paths/{}/get/responses/200/content/application~1json/schema",
            path.replace('/', "~1")
        )
    };
    let e = convert(&doc, SchemaMode::Output, &media("/dangling")).unwrap_err();
    match &e {
        GenerateError::DanglingRef {
            file,
            pointer,
            reference,
        } => {
            assert_eq!(file, "refs.yaml");
            assert_eq!(
                pointer,
                "/paths/~1dangling/get/responses/200/content/application~1json/schema"
            );
            assert_eq!(reference, "#/components/schemas/Missing");
        }
        _ => panic!("{e}"),
    }
    assert!(e.to_string().contains("/paths/~1dangling/get"), "{e}");
    for (path, reference) in [
        ("/remote-file", "other.yaml#/components/schemas/Pet"),
        ("/remote-url", "https://example.com/schemas/pet.json"),
    ] {
        let e = convert(&doc, SchemaMode::Output, &media(path)).unwrap_err();
        assert!(
            matches!(&e, GenerateError::RemoteRef { reference: r, .. } if r == reference),
            "{e}"
        );
        assert!(e.to_string().contains("never fetched"), "{e}");
    }
    let e = resolve_document(&doc, &Limits::default()).unwrap_err();
    assert!(
        matches!(
            e,
            GenerateError::DanglingRef { .. } | GenerateError::RemoteRef { .. }
        ),
        "{e}"
    );
}

/// A 10,000-deep schema must give a typed error whether the parser refuses
/// it (Syntax) or a later stage does (TooDeep).
fn assert_deep_input_is_refused(text: &str, file: &str) {
    let doc = match load(text.as_bytes(), file) {
        Err(GenerateError::Syntax { message, .. }) => {
            // The parser's depth bound, or (YAML flow collections) the
            // pre-scan that keeps the YAML scanner linear.
            assert!(
                message.contains("recursion limit") || message.contains("nest deeper than 128"),
                "{message}"
            );
            return;
        }
        Err(e) => panic!("unexpected error: {e}"),
        Ok(doc) => doc,
    };
    let e = convert(&doc, SchemaMode::Input, "/components/schemas/Deep").unwrap_err();
    assert!(
        matches!(&e, GenerateError::TooDeep { pointer, .. } if pointer.contains("/properties/a")),
        "{e}"
    );
    let e = resolve_document(&doc, &Limits::default()).unwrap_err();
    assert!(matches!(e, GenerateError::TooDeep { .. }), "{e}");
    // serde_json drops values recursively: leak the (test-only) deep value.
    std::mem::forget(doc);
}

#[test]
fn ten_thousand_deep_json_is_a_typed_error() {
    let levels = 10_000;
    let mut text = String::from(
        r#"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}, "components": {"schemas": {"Deep": "#,
    );
    text.push_str(&r#"{"type": "object", "properties": {"a": "#.repeat(levels));
    text.push_str(r#"{"type": "string"}"#);
    text.push_str(&"}}".repeat(levels));
    text.push_str("}}}");
    assert_deep_input_is_refused(&text, "deep.json");
}

#[test]
fn ten_thousand_deep_yaml_is_a_typed_error() {
    let levels = 10_000;
    let mut text = String::from(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n    Deep: ",
    );
    text.push_str(&"{type: object, properties: {a: ".repeat(levels));
    text.push_str("{type: string}");
    text.push_str(&"}}".repeat(levels));
    text.push('\n');
    assert_deep_input_is_refused(&text, "deep.yaml");
    let mut block = String::from("openapi: 3.0.3\npaths: {}\ncomponents:\n  schemas:\n    Deep:\n");
    for i in 0..levels.min(3_000) {
        block.push_str(&" ".repeat(6 + 2 * i));
        block.push_str("- \n");
    }
    assert_deep_input_is_refused(&block, "deep-block.yaml");
}

#[test]
fn ten_thousand_deep_reference_chain_is_too_deep() {
    let mut schemas = Map::new();
    for i in 0..10_000 {
        schemas.insert(
            format!("S{i}"),
            json!({"type": "object", "properties": {"a": {"$ref": format!("#/components/schemas/S{}", i + 1)}}}),
        );
    }
    schemas.insert("S10000".into(), json!({"type": "string"}));
    let mut root = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}});
    root["components"] = json!({"schemas": schemas});
    let text = serde_json::to_string(&root).unwrap();
    let doc = load(text.as_bytes(), "chain.json").unwrap();
    let e = convert(&doc, SchemaMode::Input, "/components/schemas/S0").unwrap_err();
    assert!(
        matches!(&e, GenerateError::TooDeep { pointer, limit: 64, .. } if pointer.starts_with("/components/schemas/S")),
        "{e}"
    );
    let e = resolve_document(&doc, &Limits::default()).unwrap_err();
    assert!(matches!(e, GenerateError::TooDeep { .. }), "{e}");
}

const SPEC_31: &str = r##"
openapi: 3.1.0
info: {title: t, version: "1"}
webhooks:
  ping: {post: {responses: {"200": {description: ok}}}}
paths:
  /things:
    post:
      requestBody:
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Thing"}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Thing"}
components:
  schemas:
    Thing:
      type: object
      required: [id, name, kind, password]
      properties:
        id: {type: string, readOnly: true}
        name: {type: [string, "null"], examples: [rex], x-order: 1}
        kind: {const: dog}
        age: {type: integer, exclusiveMinimum: 0, exclusiveMaximum: 30}
        password: {type: string, writeOnly: true}
        either: {type: [string, integer]}
        photo: {type: string, contentMediaType: application/octet-stream}
        owner: {$ref: "#/components/schemas/Owner", description: who}
      example: {id: "1"}
      xml: {name: thing}
      externalDocs: {url: "https://example.com"}
    Owner:
      type: [object, "null"]
      properties:
        pets:
          type: array
          items: {$ref: "#/components/schemas/Thing"}
"##;

#[test]
fn openapi_31_normalises_and_converts() {
    let doc = load_str(SPEC_31, "spec31.yaml");
    assert_eq!(doc.openapi_version, "3.1.0");
    assert_eq!(doc.root["openapi"], "3.0.3");
    assert!(doc.root.get("webhooks").is_none());
    let thing = &doc.root["components"]["schemas"]["Thing"]["properties"];
    assert_eq!(
        thing["name"],
        json!({"type": "string", "example": "rex", "x-order": 1, "nullable": true})
    );
    assert_eq!(thing["kind"], json!({"enum": ["dog"]}));
    assert_eq!(
        thing["age"],
        json!({"type": "integer", "exclusiveMinimum": true, "exclusiveMaximum": true, "minimum": 0, "maximum": 30})
    );
    assert_eq!(
        thing["either"],
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
    assert_eq!(
        thing["photo"],
        json!({"type": "string", "format": "binary"})
    );

    let (input, input_defs) =
        convert(&doc, SchemaMode::Input, "/components/schemas/Thing").unwrap();
    let props = input["properties"].as_object().unwrap();
    assert_eq!(
        props.keys().collect::<Vec<_>>(),
        [
            "name", "kind", "age", "password", "either", "photo", "owner"
        ]
    );
    assert_eq!(input["required"], json!(["name", "kind", "password"]));
    assert_eq!(props["name"], json!({"type": ["string", "null"]}));
    assert_eq!(
        props["age"],
        json!({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 30})
    );
    assert_eq!(
        props["owner"],
        json!({"$ref": "#/$defs/Owner", "description": "who"})
    );
    for gone in ["example", "xml", "externalDocs"] {
        assert!(input.get(gone).is_none(), "{gone}");
    }
    assert_eq!(input_defs.keys().collect::<Vec<_>>(), ["Owner", "Thing"]);
    assert_eq!(input_defs["Owner"]["type"], json!(["object", "null"]));
    let full = assert_valid_2020_12(&input, &input_defs);
    let v = jsonschema::draft202012::new(&full).unwrap();
    assert!(v.is_valid(&json!({"name": null, "kind": "dog", "password": "p", "owner": {"pets": [{"name": "a", "kind": "dog", "password": "q"}]}})));
    assert!(!v.is_valid(&json!({"name": "a", "kind": "cat", "password": "p"})));
    assert!(!v.is_valid(&json!({"name": "a", "kind": "dog", "password": "p", "age": 0})));

    let (output, output_defs) =
        convert(&doc, SchemaMode::Output, "/components/schemas/Thing").unwrap();
    let props = output["properties"].as_object().unwrap();
    assert!(props.contains_key("id") && !props.contains_key("password"));
    assert_eq!(output["required"], json!(["id", "name", "kind"]));
    assert_valid_2020_12(&output, &output_defs);
}

#[test]
fn nullable_read_only_write_only_and_extensions_in_30() {
    let doc = load_str(
        r##"
openapi: 3.0.3
info: {title: t, version: "1"}
paths: {}
components:
  schemas:
    Base:
      type: object
      x-internal: true
      discriminator: {propertyName: kind}
      required: [kind, id]
      properties:
        kind: {type: string, enum: [a, b], nullable: true, x-enum-varnames: [A, B]}
        id: {type: integer, readOnly: true, example: 3}
        token: {type: string, writeOnly: true}
        when: {type: string, format: date-time, nullable: true, default: null}
    Extended:
      nullable: true
      allOf:
        - $ref: "#/components/schemas/Base"
        - type: object
          properties:
            extra: {type: string, maxLength: 10, xml: {attribute: true}}
"##,
        "nullable.yaml",
    );
    let (base, _) = convert(&doc, SchemaMode::Input, "/components/schemas/Base").unwrap();
    assert_eq!(
        base,
        json!({
            "type": "object",
            "required": ["kind"],
            "properties": {
                "kind": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "token": {"type": "string", "writeOnly": true},
                "when": {"type": ["string", "null"], "format": "date-time", "default": null}
            }
        })
    );
    let (extended, defs) =
        convert(&doc, SchemaMode::Output, "/components/schemas/Extended").unwrap();
    assert!(defs.is_empty());
    assert_eq!(extended["anyOf"][1], json!({"type": "null"}));
    assert_eq!(
        extended["anyOf"][0]["allOf"][1]["properties"]["extra"],
        json!({"type": "string", "maxLength": 10})
    );
    let text = serde_json::to_string(&extended).unwrap();
    for gone in ["x-", "discriminator", "example", "xml", "nullable", "token"] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
    assert_valid_2020_12(&extended, &defs);
    let inner = extended["anyOf"][0].clone();
    let shape = object_shape(&inner).unwrap();
    assert_eq!(
        shape.properties.keys().collect::<Vec<_>>(),
        ["kind", "id", "when", "extra"]
    );
    assert_eq!(shape.required, ["kind", "id"]);
}

#[test]
fn object_shape_merges_all_of_members() {
    let doc = load_str(
        r##"
openapi: 3.0.3
info: {title: t, version: "1"}
paths: {}
components:
  schemas:
    Named: {type: object, required: [name], properties: {name: {type: string}}}
    Sized: {type: object, required: [size, name], properties: {size: {type: integer}, name: {minLength: 1}}}
    Both:
      allOf:
        - $ref: "#/components/schemas/Named"
        - $ref: "#/components/schemas/Sized"
        - type: object
          additionalProperties: false
    Choice:
      oneOf:
        - $ref: "#/components/schemas/Named"
        - $ref: "#/components/schemas/Sized"
"##,
        "shape.yaml",
    );
    let (both, _) = convert(&doc, SchemaMode::Input, "/components/schemas/Both").unwrap();
    let shape = object_shape(&both).unwrap();
    assert_eq!(
        shape.properties.keys().collect::<Vec<_>>(),
        ["name", "size"]
    );
    assert_eq!(
        shape.properties["name"],
        json!({"allOf": [{"type": "string"}, {"minLength": 1}]})
    );
    assert_eq!(shape.required, ["name", "size"]);
    assert_eq!(shape.additional_properties, Some(json!(false)));
    let (choice, _) = convert(&doc, SchemaMode::Input, "/components/schemas/Choice").unwrap();
    assert!(object_shape(&choice).is_none());
}

#[test]
fn resolve_document_marks_cycles() {
    let doc = load_str(
        r##"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /nodes:
    get:
      x-cfPermissionsRequired: {enum: ["#node.read"]}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Node"}
components:
  schemas:
    Node:
      type: object
      properties:
        next: {$ref: "#/components/schemas/Node"}
        peer: {$ref: "#/components/schemas/Peer"}
    Peer:
      type: object
      properties:
        back: {$ref: "#/components/schemas/Node"}
"##,
        "cyclic.yaml",
    );
    let resolved = resolve_document(&doc, &Limits::default()).unwrap();
    let schema = &resolved["paths"]["/nodes"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"];
    assert_eq!(
        schema["properties"]["next"],
        json!({"$circular": "#/components/schemas/Node"})
    );
    assert_eq!(
        schema["properties"]["peer"]["properties"]["back"],
        json!({"$circular": "#/components/schemas/Node"})
    );
    assert_eq!(
        resolved["components"]["schemas"]["Peer"]["properties"]["back"]["properties"]["peer"],
        json!({"$circular": "#/components/schemas/Peer"})
    );
    assert_eq!(
        resolved["paths"]["/nodes"]["get"]["x-cfPermissionsRequired"],
        json!({"enum": ["#node.read"]})
    );
    assert!(
        !serde_json::to_string(&resolved)
            .unwrap()
            .contains("\"$ref\"")
    );
}

/// Every component schema of the real Cloudflare release, through the
/// converter (both modes) and `resolve_document`, with timings.
#[test]
fn real_cloudflare_spec() {
    let Some(shared) = common::shared_dir("real_cloudflare_spec") else {
        return;
    };
    let path = shared.join("specs/cloudflare/openapi.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let t = Instant::now();
    let doc = load(&bytes, "openapi.json").unwrap();
    let load_time = t.elapsed();
    let t = Instant::now();
    let cycles = Cycles::compute(&doc);
    let cycles_time = t.elapsed();
    let t = Instant::now();
    let resolved = resolve_document(&doc, &Limits::default()).unwrap();
    let resolve_time = t.elapsed();
    let resolved_bytes = serde_json::to_vec(&resolved).unwrap().len();
    assert!(
        !serde_json::to_string(&resolved)
            .unwrap()
            .contains("\"$ref\"")
    );

    let schemas = doc.root["components"]["schemas"].as_object().unwrap();
    let t = Instant::now();
    let mut converted = Vec::new();
    let mut with_defs = 0;
    for (name, schema) in schemas {
        for mode in [SchemaMode::Input, SchemaMode::Output] {
            let pointer = format!(
                "/components/schemas/{}",
                name.replace('~', "~0").replace('/', "~1")
            );
            let mut conv = SchemaConverter::new(&doc, &cycles, mode, Limits::default());
            let out = conv
                .convert(schema, &pointer)
                .unwrap_or_else(|e| panic!("{e}"));
            let defs = conv.into_defs();
            if !defs.is_empty() {
                with_defs += 1;
            }
            converted.push((out, defs));
        }
    }
    let convert_time = t.elapsed();
    let t = Instant::now();
    for (out, defs) in &converted {
        assert_valid_2020_12(out, defs);
    }
    let validate_time = t.elapsed();
    eprintln!(
        "cloudflare: {} schemas, {} recursive; load {:?}, cycles {:?}, resolve_document {:?} ({} MB), \
         convert x2 {:?} ({} with $defs), meta-validate {:?}",
        schemas.len(),
        cycles.recursive_pointers().len(),
        load_time,
        cycles_time,
        resolve_time,
        resolved_bytes / 1_000_000,
        convert_time,
        with_defs,
        validate_time
    );
}

/// Data nested in a schema (`default` here) can make a tool schema nest
/// deeper than `artifacts/tools.json` can hold for serde_json to read it
/// back (as `toolforge diff` does); the operation is refused with its
/// pointer instead (or skipped, with `on_invalid_operation: skip`). The
/// same limit as for `artifacts/spec.json`, which the `generate` fuzz
/// target hit.
#[test]
fn tool_schemas_stay_readable_in_tools_json() {
    let spec = |levels: usize| {
        let mut deep = json!(1);
        for _ in 0..levels {
            deep = json!([deep]);
        }
        let doc = json!({
            "openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": {"/x": {"post": {"operationId": "deep", "responses": {"200": {"description": "ok"}},
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/S"}}}}}}},
            "components": {"schemas": {"S": {"type": "array", "items": {"type": "array"}, "default": deep}}}
        });
        serde_json::to_vec(&doc).unwrap()
    };
    let mut config = common::config();
    config.policy = toolforge_generator::config::PolicyKind::Generic;
    config.options.resolved_spec = false;
    let layout = common::layout(&config);
    let ok = toolforge_generator::generate(&spec(100), "deep.json", &config, &layout).unwrap();
    let tools = ok
        .files
        .iter()
        .find(|f| f.path == "artifacts/tools.json")
        .unwrap();
    serde_json::from_slice::<Value>(&tools.contents).unwrap();
    let e = toolforge_generator::generate(&spec(123), "deep.json", &config, &layout).unwrap_err();
    assert!(
        matches!(&e, GenerateError::TooDeep { pointer, limit: 124, .. } if pointer == "/paths/~1x/post"),
        "{e}"
    );
    config.options.on_invalid_operation = toolforge_generator::config::InvalidOperation::Skip;
    let skipped = toolforge_generator::generate(&spec(123), "deep.json", &config, &layout).unwrap();
    assert_eq!(skipped.catalogue.skipped.len(), 1);
}
