//! Security schemes end to end: a small spec with every kind of scheme,
//! the catalogue's scheme table and requirements as emitted into
//! `lib.rs` and the product modules, the README's "Credentials" section
//! and `.env.example`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use toolforge_generator::config::{ForgeConfig, PolicyKind};
use toolforge_generator::{Generated, generate};

const SPEC: &str = r##"{
  "openapi": "3.0.3",
  "info": {"title": "Pets", "version": "1"},
  "servers": [{"url": "https://pets.example.com"}],
  "security": [{"header_key": [], "cookie_key": []}, {"bearer": []}],
  "paths": {
    "/pets": {
      "get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}},
      "post": {"operationId": "createPet", "security": [{"machine": ["pets:write"]}, {"basic": []}],
               "responses": {"201": {"description": "ok"}}}
    },
    "/health": {"get": {"operationId": "health", "security": [], "responses": {"200": {"description": "ok"}}}},
    "/search": {"get": {"operationId": "search", "security": [{}, {"query_key": []}, {"ghost": []}],
                        "responses": {"200": {"description": "ok"}}}},
    "/legacy": {"get": {"operationId": "legacy", "security": [{"digest": []}, {"mtls": []}, {"oidc": []}, {"oauth": ["read"]}],
                        "responses": {"200": {"description": "ok"}}}}
  },
  "components": {"securitySchemes": {
    "header_key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
    "query_key": {"type": "apiKey", "in": "query", "name": "api_key"},
    "cookie_key": {"type": "apiKey", "in": "cookie", "name": "session"},
    "bearer": {"$ref": "#/components/x-shared/bearer"},
    "basic": {"type": "http", "scheme": "Basic"},
    "digest": {"type": "http", "scheme": "digest"},
    "machine": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://pets.example.com/token", "scopes": {"pets:write": "w"}}}},
    "oauth": {"type": "oauth2", "flows": {"authorizationCode": {"authorizationUrl": "https://a", "tokenUrl": "https://t", "scopes": {}}}},
    "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://pets.example.com/.well-known/openid-configuration"},
    "mtls": {"type": "mutualTLS"},
    "pets_bearer_2": {"type": "http", "scheme": "bearer"}
  }, "x-shared": {"bearer": {"type": "http", "scheme": "bearer"}}}
}"##;

fn generate_pets() -> Generated {
    let mut config: ForgeConfig = common::config();
    config.api = "pets".to_owned();
    config.policy = PolicyKind::Generic;
    generate(
        SPEC.as_bytes(),
        "pets.json",
        &config,
        &common::layout(&config),
    )
    .unwrap()
}

fn file(g: &Generated, path: &str) -> String {
    let f = g.files.iter().find(|f| f.path == path).unwrap();
    String::from_utf8(f.contents.clone()).unwrap()
}

#[test]
fn every_kind_of_scheme_is_emitted_into_the_catalogue() {
    let g = generate_pets();
    let lib = file(&g, "src/lib.rs");
    // Sorted by name: basic 0, bearer 1, cookie_key 2, digest 3,
    // header_key 4, machine 5, mtls 6, oauth 7, oidc 8, pets_bearer_2 9,
    // query_key 10.
    for want in [
        "use toolforge_runtime::security::KeyLocation;\nuse toolforge_runtime::security::OperationScopes;\nuse toolforge_runtime::security::SchemeKind;\nuse toolforge_runtime::security::SecurityScheme;\n",
        // The client-credentials scopes createPet lists; listPets lists no
        // client-credentials scheme, legacy's `oauth` is not one.
        "scopes: &[\n            OperationScopes {\n                operation: \"createPet\",\n                scheme: 5,\n                scopes: &[\"pets:write\"],\n            },\n        ],",
        "name: \"basic\",\n        kind: SchemeKind::Basic,\n        env: &[\"PETS_BASIC_USERNAME\", \"PETS_BASIC_PASSWORD\"],",
        "name: \"bearer\",\n        kind: SchemeKind::Bearer,\n        env: &[\"PETS_BEARER\"],",
        "location: KeyLocation::Cookie,\n            name: \"session\",",
        "kind: SchemeKind::Unsupported {\n            what: \"http digest\",\n        },\n        env: &[],",
        "location: KeyLocation::Header,\n            name: \"X-Api-Key\",\n        },\n        env: &[\"PETS_HEADER_KEY\"],",
        "kind: SchemeKind::ClientCredentials {\n            token_url: \"https://pets.example.com/token\",\n            scopes: &[\"pets:write\"],\n        },\n        env: &[\"PETS_MACHINE_CLIENT_ID\", \"PETS_MACHINE_CLIENT_SECRET\"],",
        "what: \"mutualTLS\"",
        "name: \"oauth\",\n        kind: SchemeKind::Bearer,",
        "name: \"oidc\",\n        kind: SchemeKind::Bearer,\n        env: &[\"PETS_OIDC\"],",
        // The API prefix is not repeated.
        "name: \"pets_bearer_2\",\n        kind: SchemeKind::Bearer,\n        env: &[\"PETS_BEARER_2\"],",
        "location: KeyLocation::Query,\n            name: \"api_key\",",
        "security: &[&[2, 4], &[1]],",
        "primary: Some(1),",
        "..Profile::generic(\"PETS_BEARER\")",
    ] {
        assert!(lib.contains(want), "lib.rs lacks {want:?}:\n{lib}");
    }
    let module = g
        .files
        .iter()
        .filter(|f| f.path.starts_with("src/") && f.path != "src/lib.rs")
        .map(|f| String::from_utf8_lossy(&f.contents).into_owned())
        .collect::<String>();
    // A requirement is written in place or named as a `src/defs.rs` item.
    let defs = file(&g, "src/defs.rs");
    for (tool, want) in [
        ("list_pets", "&[&[2, 4], &[1]]"),
        ("create_pet", "&[&[5], &[0]]"),
        ("health", "&[]"),
        ("search", "&[&[], &[10]]"),
        ("legacy", "&[&[3], &[6], &[8], &[7]]"),
    ] {
        let at = module
            .find(&format!("name: \"{tool}\""))
            .unwrap_or_else(|| panic!("no tool {tool}"));
        let rest = &module[at..];
        let security = rest.find("security: ").unwrap() + "security: ".len();
        let value = &rest[security..rest[security..].find(",\n").unwrap() + security];
        let value = match value.strip_prefix("crate::defs::") {
            Some(name) => {
                let item = format!("pub(crate) const {name}: Requirement = ");
                let at = defs.find(&item).unwrap_or_else(|| panic!("no {item}")) + item.len();
                &defs[at..at + defs[at..].find(";\n").unwrap()]
            }
            None => value,
        };
        assert_eq!(value, want, "{tool}");
    }
    let warnings = &g.catalogue.profile.security_warnings;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("undeclared scheme `ghost`"),
        "{warnings:?}"
    );
}

#[test]
fn the_readme_and_env_example_list_every_variable() {
    let g = generate_pets();
    let readme = file(&g, "README.md");
    for want in [
        "## Credentials",
        "| `PETS_BASIC_USERNAME` | `basic` | HTTP basic | http basic | user name | 1 |",
        "| `PETS_BASIC_PASSWORD` | `basic` | HTTP basic | http basic | password (may be empty) | 1 |",
        "An HTTP basic password may be empty or unset (RFC 7617): when the API's documented form is the key as the user name, set only the user name.",
        "| `PETS_HEADER_KEY` | `header_key` | API key in header `X-Api-Key` | apiKey (header) | API key | 1 |",
        "| (none) | `mtls` | mutualTLS (not supported) | mutualTLS / other | not sendable | 1 |",
        "| `PETS_MACHINE_CLIENT_SECRET` | `machine` | OAuth 2.0 client credentials | oauth2 client credentials | OAuth client secret | 1 |",
        "Tools needing no credential: 1; tools whose credential is optional: 1.",
        "fills scheme `bearer`; its default variable is `PETS_BEARER`.",
        "undeclared scheme `ghost`",
    ] {
        assert!(readme.contains(want), "README lacks {want:?}:\n{readme}");
    }
    let env = file(&g, ".env.example");
    assert!(env.starts_with("# @generated by toolforge "), "{env}");
    for want in [
        "\n# basic: HTTP basic, declared as http basic; 1 tool(s)\n# user name\nPETS_BASIC_USERNAME=\n# password (may be empty)\nPETS_BASIC_PASSWORD=\n# An HTTP basic password may be empty or unset (RFC 7617): when the API's documented form is the key as the user name, set only the user name.\n",
        "\n# digest: http digest (not supported), declared as http (other schemes); 1 tool(s)\n# (no variable: toolforge cannot send this scheme)\n",
        "\nPETS_QUERY_KEY=\n",
    ] {
        assert!(env.contains(want), ".env.example lacks {want:?}:\n{env}");
    }
    let vars = env.lines().filter(|l| l.ends_with('=')).count();
    assert_eq!(vars, 11, "{env}");
    assert_eq!(generate_pets().files, g.files, "deterministic");
}

#[test]
fn a_spec_without_schemes_sends_its_token_when_set() {
    let spec = SPEC
        .replace("\"securitySchemes\"", "\"x-not-schemes\"")
        .replace(
            "\"$ref\": \"#/components/x-shared/bearer\"",
            "\"type\": \"http\"",
        );
    let mut config: ForgeConfig = common::config();
    config.api = "pets".to_owned();
    config.policy = PolicyKind::Generic;
    let g = generate(
        spec.as_bytes(),
        "pets.json",
        &config,
        &common::layout(&config),
    )
    .unwrap();
    let lib = file(&g, "src/lib.rs");
    for want in [
        "name: \"api_token\",\n        kind: SchemeKind::Bearer,\n        env: &[\"PETS_API_TOKEN\"],",
        "security: &[&[0], &[]],",
        "primary: Some(0),",
        "..Profile::generic(\"PETS_API_TOKEN\")",
    ] {
        assert!(lib.contains(want), "lib.rs lacks {want:?}:\n{lib}");
    }
    assert!(
        g.catalogue
            .tools()
            .all(|t| t.security == vec![vec![0], vec![]])
    );
    assert!(file(&g, "README.md").contains("The spec declares no security scheme"));
}

#[test]
fn each_operation_records_the_client_credentials_scopes_it_lists() {
    const SCOPED: &str = r##"{
  "openapi": "3.0.3",
  "info": {"title": "Shop", "version": "1"},
  "servers": [{"url": "https://shop.example.com"}],
  "security": [{"cc": ["orders:read"]}],
  "paths": {
    "/a": {"get": {"operationId": "globalOnly", "responses": {"200": {"description": "ok"}}}},
    "/b": {"get": {"operationId": "union", "security": [{"cc": ["b:write", "orders:read"]}, {"cc": ["c:read"], "key": []}],
                   "responses": {"200": {"description": "ok"}}}},
    "/c": {"get": {"operationId": "open", "security": [], "responses": {"200": {"description": "ok"}}}},
    "/d": {"get": {"operationId": "none", "security": [{"cc": []}], "responses": {"200": {"description": "ok"}}}},
    "/e": {"get": {"operationId": "keyOnly", "security": [{"key": []}, {"ghost": ["x"]}], "responses": {"200": {"description": "ok"}}}}
  },
  "components": {"securitySchemes": {
    "cc": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/token", "scopes": {}}}},
    "key": {"type": "apiKey", "in": "header", "name": "X-Key"}
  }}
}"##;
    let mut config: ForgeConfig = common::config();
    config.api = "shop".to_owned();
    config.policy = PolicyKind::Generic;
    let g = generate(
        SCOPED.as_bytes(),
        "shop.json",
        &config,
        &common::layout(&config),
    )
    .unwrap();
    let got: Vec<(String, u16, Vec<String>)> = g
        .catalogue
        .profile
        .scopes
        .iter()
        .map(|s| (s.operation.clone(), s.scheme, s.scopes.clone()))
        .collect();
    let owned = |op: &str, scopes: &[&str]| {
        (
            op.to_owned(),
            0,
            scopes.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        got,
        [
            owned("globalOnly", &["orders:read"]),
            owned("none", &[]),
            owned("union", &["b:write", "c:read", "orders:read"]),
        ]
    );
    // The scheme still declares the union of every operation's scopes.
    let lib = file(&g, "src/lib.rs");
    assert!(
        lib.contains("scopes: &[\"b:write\", \"c:read\", \"orders:read\"],"),
        "{lib}"
    );
}
