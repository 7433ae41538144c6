//! An OpenAPI 3.1 document (type arrays, `const`, `examples`, numeric
//! `exclusiveMinimum`, webhooks) is normalised and generates a valid crate.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use toolforge_generator::config::{ForgeConfig, sha256_hex};
use toolforge_generator::{CrateLayout, generate};

const SPEC: &str = r#"
openapi: 3.1.0
info: {title: Pets, version: "1"}
webhooks:
  newPet:
    post:
      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/Pet'}}}}
      responses: {"200": {description: ok}}
paths:
  /pets/{petId}:
    parameters:
      - {name: petId, in: path, required: true, schema: {type: string}}
    get:
      operationId: getPet
      summary: Read a pet
      responses:
        "200":
          description: ok
          content: {application/json: {schema: {$ref: '#/components/schemas/Pet'}}}
    put:
      operationId: putPet
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: '#/components/schemas/Pet'}}}
      responses: {"204": {description: done}}
components:
  schemas:
    Pet:
      type: object
      required: [kind, name]
      properties:
        kind: {const: pet}
        name: {type: [string, "null"], examples: [Rex]}
        age: {type: integer, exclusiveMinimum: 0}
        tags: {type: array, items: {type: [string, integer]}}
        parent: {$ref: '#/components/schemas/Pet', description: The parent pet}
"#;

#[test]
fn openapi_31_document_generates() {
    let mut config =
        ForgeConfig::generic("pets", Path::new("pets.yaml"), &sha256_hex(SPEC.as_bytes()));
    config.options.resolved_spec = true;
    let layout = CrateLayout {
        runtime_path: Some("../runtime".into()),
        standalone: true,
    };
    let g = generate(SPEC.as_bytes(), "pets.yaml", &config, &layout).unwrap();
    let names: Vec<&str> = g.catalogue.tools().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["get_pet", "put_pet"]);
    for t in g.catalogue.tools() {
        assert!(
            jsonschema::meta::is_valid(&t.input_schema),
            "{}: {}",
            t.name,
            t.input_schema
        );
        assert_eq!(t.input_schema["type"], "object");
    }
    let put = g.catalogue.tools().find(|t| t.name == "put_pet").unwrap();
    let props = &put.input_schema["properties"];
    assert_eq!(props["kind"]["enum"], serde_json::json!(["pet"]), "{props}");
    assert_eq!(
        props["name"]["type"],
        serde_json::json!(["string", "null"]),
        "{props}"
    );
    assert_eq!(props["age"]["exclusiveMinimum"], 0, "{props}");
    assert!(
        props["parent"]["$ref"]
            .as_str()
            .is_some_and(|r| r.starts_with("#/$defs/")),
        "{props}"
    );
    let text = put.input_schema.to_string();
    assert!(
        !text.contains("examples") && !text.contains("nullable"),
        "{text}"
    );
    // A valid instance passes, an invalid one fails.
    let v = jsonschema::draft202012::new(&put.input_schema).unwrap();
    assert!(v.is_valid(&serde_json::json!({"petId": "1", "kind": "pet", "name": null, "age": 2})));
    assert!(!v.is_valid(&serde_json::json!({"petId": "1", "kind": "cat", "name": "x"})));
    assert!(!v.is_valid(&serde_json::json!({"petId": "1", "kind": "pet", "name": "x", "age": 0})));
}
