#![allow(clippy::unwrap_used, clippy::panic)]

use serde_json::{Value, json};

use super::*;
use crate::config::PolicyKind;
use crate::load::load;

fn doc(root: Value) -> Document {
    let mut root = root;
    root["openapi"] = json!("3.0.3");
    root["info"] = json!({"title": "t", "version": "1"});
    root.as_object_mut()
        .unwrap()
        .entry("paths")
        .or_insert(json!({}));
    load(root.to_string().as_bytes(), "t.json").unwrap()
}

fn generic() -> Policy {
    Policy::new(PolicyKind::Generic)
}

#[test]
fn kinds_map_as_the_runtime_sends_them() {
    let cases = [
        (
            json!({"type": "apiKey", "in": "header", "name": "X-Key"}),
            SchemeKind::ApiKey {
                location: KeyLocation::Header,
                name: "X-Key".into(),
            },
            DeclaredKind::ApiKeyHeader,
        ),
        (
            json!({"type": "apiKey", "in": "query", "name": "key"}),
            SchemeKind::ApiKey {
                location: KeyLocation::Query,
                name: "key".into(),
            },
            DeclaredKind::ApiKeyQuery,
        ),
        (
            json!({"type": "apiKey", "in": "cookie", "name": "sid"}),
            SchemeKind::ApiKey {
                location: KeyLocation::Cookie,
                name: "sid".into(),
            },
            DeclaredKind::ApiKeyCookie,
        ),
        (
            json!({"type": "http", "scheme": "Bearer"}),
            SchemeKind::Bearer,
            DeclaredKind::HttpBearer,
        ),
        (
            json!({"type": "http", "scheme": "basic"}),
            SchemeKind::Basic,
            DeclaredKind::HttpBasic,
        ),
        (
            json!({"type": "http", "scheme": "digest"}),
            SchemeKind::Unsupported {
                what: "http digest".into(),
            },
            DeclaredKind::HttpOther,
        ),
        (
            json!({"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://a/token", "scopes": {}}}}),
            SchemeKind::ClientCredentials {
                token_url: "https://a/token".into(),
                scopes: vec![],
            },
            DeclaredKind::Oauth2ClientCredentials,
        ),
        (
            json!({"type": "oauth2", "flows": {"authorizationCode": {}}}),
            SchemeKind::Bearer,
            DeclaredKind::Oauth2Other,
        ),
        (
            json!({"type": "openIdConnect", "openIdConnectUrl": "https://a"}),
            SchemeKind::Bearer,
            DeclaredKind::OpenIdConnect,
        ),
        (
            json!({"type": "mutualTLS"}),
            SchemeKind::Unsupported {
                what: "mutualTLS".into(),
            },
            DeclaredKind::Other,
        ),
        (
            json!({"type": "carrier-pigeon"}),
            SchemeKind::Unsupported {
                what: "carrier-pigeon".into(),
            },
            DeclaredKind::Other,
        ),
    ];
    for (scheme, kind, declared) in cases {
        assert_eq!(classify(&scheme), (kind, declared), "{scheme}");
    }
    // Malformed entries never panic; they become unsupported.
    for odd in [
        json!({}),
        json!({"type": 5}),
        json!({"type": "apiKey", "in": "body", "name": "k"}),
        json!({"type": "apiKey", "in": "header"}),
    ] {
        assert!(
            matches!(classify(&odd).0, SchemeKind::Unsupported { .. }),
            "{odd}"
        );
    }
}

/// A spec with schemes `a` (bearer), `b` (apiKey), `c` (basic), `cc`
/// (client credentials), the given global requirement and one operation
/// per entry of `ops` (its `security`, or none).
fn spec(global: Option<Value>, ops: &[Option<Value>]) -> Document {
    let mut paths = serde_json::Map::new();
    for (i, security) in ops.iter().enumerate() {
        let mut op = json!({"responses": {"200": {"description": "ok"}}});
        if let Some(s) = security {
            op["security"] = s.clone();
        }
        paths.insert(format!("/op{i}"), json!({"get": op}));
    }
    let mut root = json!({
        "paths": paths,
        "components": {"securitySchemes": {
            "b": {"type": "apiKey", "in": "header", "name": "X-B"},
            "a": {"$ref": "#/components/x-schemes/a"},
            "c": {"type": "http", "scheme": "basic"},
            "cc": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/t", "scopes": {}}}},
        },
        "x-schemes": {"a": {"type": "http", "scheme": "bearer"}}},
    });
    if let Some(g) = global {
        root["security"] = g;
    }
    doc(root)
}

fn resolve_all(d: &Document, policy: Policy) -> (Vec<Requirement>, SecurityTable) {
    let mut r = Resolver::new(d, policy);
    let mut reqs = Vec::new();
    let paths = d.root["paths"].as_object().unwrap();
    for (path, item) in paths {
        let ptr = format!("/paths/{}/get", path.replace('/', "~1"));
        reqs.push(r.resolve(&item["get"], &ptr));
    }
    (reqs, r.finish("pets", std::iter::empty()))
}

#[test]
fn an_operation_s_security_replaces_the_global_one() {
    let d = spec(
        Some(json!([{"b": []}, {"a": []}])),
        &[
            None,
            Some(json!([{"c": []}])),
            Some(json!([])),
            Some(json!([{}, {"a": []}])),
            Some(json!([{"b": [], "a": []}, {"a": [], "b": []}, {"c": []}])),
        ],
    );
    let (reqs, table) = resolve_all(&d, generic());
    let names: Vec<&str> = table.schemes.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "cc"], "sorted by name");
    assert_eq!(table.global, vec![vec![1], vec![0]]);
    assert_eq!(
        reqs,
        [
            vec![vec![1], vec![0]],
            vec![vec![2]],
            vec![],
            vec![vec![], vec![0]],
            vec![vec![0, 1], vec![2]],
        ]
    );
    assert!(table.warnings.is_empty(), "{:?}", table.warnings);
    assert_eq!(
        table.schemes[0].kind,
        SchemeKind::Bearer,
        "the $ref is followed"
    );
    assert_eq!(
        table
            .schemes
            .iter()
            .map(|s| s.env.clone())
            .collect::<Vec<_>>(),
        [
            vec!["PETS_A".to_owned()],
            vec!["PETS_B".to_owned()],
            vec!["PETS_C_USERNAME".to_owned(), "PETS_C_PASSWORD".to_owned()],
            vec![
                "PETS_CC_CLIENT_ID".to_owned(),
                "PETS_CC_CLIENT_SECRET".to_owned()
            ],
        ]
    );
}

#[test]
fn undeclared_schemes_drop_their_alternatives_with_a_warning() {
    let d = spec(
        Some(json!([{"ghost": []}, {"a": []}])),
        &[
            None,
            Some(json!([{"ghost": [], "b": []}])),
            Some(json!([{"phantom": []}, {"c": []}])),
            Some(json!("nonsense")),
            Some(json!([5, {"b": []}])),
        ],
    );
    let (reqs, table) = resolve_all(&d, generic());
    assert_eq!(table.global, vec![vec![0]]);
    assert_eq!(
        reqs,
        [
            vec![vec![0]],
            vec![],
            vec![vec![2]],
            vec![vec![0]],
            vec![vec![1]]
        ],
        "a non-array `security` is ignored (the global applies)"
    );
    assert_eq!(table.warnings.len(), 4, "{:#?}", table.warnings);
    let all = table.warnings.join("\n");
    assert!(
        all.contains("undeclared scheme `ghost` (2 requirement(s) do)"),
        "{all}"
    );
    assert!(
        all.contains(
            "/paths/~1op2/get/security: security requirement names undeclared scheme `phantom`"
        ),
        "{all}"
    );
    assert!(
        all.contains("/paths/~1op3/get/security: `security` is not an array"),
        "{all}"
    );
    assert!(
        all.contains("/paths/~1op4/get/security/0: a security requirement must be an object"),
        "{all}"
    );
}

#[test]
fn client_credentials_request_the_union_of_required_scopes() {
    let d = spec(
        Some(json!([{"cc": ["read"]}])),
        &[
            None,
            Some(json!([{"cc": ["write", "read"]}])),
            Some(json!([{"cc": ["admin"], "ghost": []}])),
        ],
    );
    let (_, table) = resolve_all(&d, generic());
    assert_eq!(
        table.schemes[3].kind,
        SchemeKind::ClientCredentials {
            token_url: "/t".into(),
            scopes: vec!["read".into(), "write".into()],
        },
        "scopes of dropped alternatives are not requested"
    );
}

#[test]
fn the_primary_scheme_is_a_one_secret_scheme() {
    let schemes: Vec<Scheme> = [
        SchemeKind::Basic,
        SchemeKind::Bearer,
        SchemeKind::ApiKey {
            location: KeyLocation::Query,
            name: "k".into(),
        },
    ]
    .into_iter()
    .enumerate()
    .map(|(i, kind)| Scheme {
        name: format!("s{i}"),
        kind,
        env: vec![format!("S{i}")],
        declared: None,
    })
    .collect();
    let none: [Requirement; 0] = [];
    // The first one-scheme alternative of the global requirement…
    assert_eq!(
        primary(&schemes, &vec![vec![0, 1], vec![2], vec![1]], none.iter()),
        Some(2)
    );
    // …skipping basic ones…
    assert_eq!(
        primary(&schemes, &vec![vec![0], vec![1]], none.iter()),
        Some(1)
    );
    // …else the first such scheme a tool uses…
    let tools = [vec![vec![0]], vec![vec![], vec![0, 2]], vec![vec![1]]];
    assert_eq!(primary(&schemes, &vec![vec![0, 1]], tools.iter()), Some(2));
    // …else none.
    assert_eq!(
        primary(&schemes, &vec![vec![0]], [vec![vec![0]]].iter()),
        None
    );
}

#[test]
fn cloudflare_prefers_its_api_token_everywhere() {
    let d = doc(json!({
        "security": [{"api_email": [], "api_key": []}, {"api_token": []}],
        "paths": {
            "/a": {"get": {"security": [{"api_email": [], "api_key": []}], "responses": {}}},
            "/b": {"get": {"security": [], "responses": {}}},
        },
        "components": {"securitySchemes": {
            "api_email": {"type": "apiKey", "in": "header", "name": "X-Auth-Email"},
            "api_key": {"type": "apiKey", "in": "header", "name": "X-Auth-Key"},
            "api_token": {"type": "http", "scheme": "bearer"},
        }},
    }));
    let (reqs, table) = resolve_all(&d, Policy::new(PolicyKind::Cloudflare));
    assert_eq!(table.global, vec![vec![2], vec![0, 1]]);
    assert_eq!(reqs, [vec![vec![2], vec![0, 1]], vec![]]);
    assert_eq!(table.primary, Some(2));
    assert_eq!(table.schemes[2].env, ["PETS_API_TOKEN"]);
    // The generic policy keeps the spec's requirements; its primary is
    // the same scheme by the generic rule.
    let (reqs, table) = resolve_all(&d, generic());
    assert_eq!(reqs[0], vec![vec![0, 1]]);
    assert_eq!(table.primary, Some(2));
}

#[test]
fn a_spec_without_schemes_gets_one_optional_bearer_token() {
    let d = doc(json!({"paths": {
        "/a": {"get": {"responses": {}}},
        "/b": {"get": {"security": [{"ghost": []}], "responses": {}}},
    }}));
    let (reqs, table) = resolve_all(&d, generic());
    assert_eq!(reqs, [vec![vec![0], vec![]], vec![vec![0], vec![]]]);
    assert_eq!(table.global, vec![vec![0], vec![]]);
    assert_eq!(table.primary, Some(0));
    assert_eq!(
        table.schemes,
        [Scheme {
            name: "api_token".into(),
            kind: SchemeKind::Bearer,
            env: vec!["PETS_API_TOKEN".into()],
            declared: None,
        }]
    );
    // An empty `securitySchemes` object is the same as none.
    let d = doc(json!({"components": {"securitySchemes": {}}}));
    let (_, table) = resolve_all(&d, generic());
    assert_eq!(table.schemes.len(), 1);
}

#[test]
fn unreadable_scheme_entries_are_warned_and_ignored() {
    let d = doc(json!({
        "security": [{"bad": []}, {"ok": []}],
        "components": {"securitySchemes": {
            "bad": {"$ref": "#/nowhere"},
            "worse": 7,
            "ok": {"type": "http", "scheme": "bearer"},
        }},
    }));
    let (_, table) = resolve_all(&d, generic());
    assert_eq!(table.schemes.len(), 1);
    assert_eq!(table.global, vec![vec![0]]);
    let all = table.warnings.join("\n");
    assert!(
        all.contains("dangling $ref `#/nowhere`") && all.contains("scheme `bad` ignored"),
        "{all}"
    );
    assert!(
        all.contains("/components/securitySchemes/worse: not an object"),
        "{all}"
    );
    assert!(all.contains("undeclared scheme `bad`"), "{all}");
}

#[test]
fn normalising_sorts_combinations_and_keeps_the_first_of_repeats() {
    assert_eq!(
        normalise(vec![vec![3, 1], vec![0], vec![1, 3, 3], vec![], vec![0]]),
        vec![vec![1, 3], vec![0], vec![]]
    );
}
