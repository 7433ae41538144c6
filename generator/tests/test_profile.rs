//! The API profile: decided by forge.json's `policy` (never by the `api`
//! name), recorded in the IR and emitted into `lib.rs` as static data.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use toolforge_generator::config::{ForgeConfig, PolicyKind};
use toolforge_generator::ir::{BodyEnvelope, Pagination, Profile};
use toolforge_generator::{Generated, generate};

fn generate_with(api: &str, policy: PolicyKind) -> Generated {
    let mut config: ForgeConfig = common::config();
    config.api = api.to_owned();
    config.policy = policy;
    let spec = common::repo().join(&config.spec.path);
    let bytes = std::fs::read(&spec).unwrap();
    generate(&bytes, "sample.yaml", &config, &common::layout(&config)).unwrap()
}

fn lib_rs(g: &Generated) -> String {
    let file = g.files.iter().find(|f| f.path == "src/lib.rs").unwrap();
    String::from_utf8(file.contents.clone()).unwrap()
}

/// `profile` without its scheme table and requirements.
fn without_security(profile: &Profile) -> Profile {
    Profile {
        schemes: Vec::new(),
        security: Vec::new(),
        primary: None,
        security_warnings: Vec::new(),
        ..profile.clone()
    }
}

fn input_schema(g: &Generated, tool: &str) -> serde_json::Value {
    g.catalogue
        .tools()
        .find(|t| t.name == tool)
        .unwrap_or_else(|| panic!("no tool {tool}"))
        .input_schema
        .clone()
}

#[test]
fn the_sample_profile() {
    let g = common::generate_sample();
    insta::assert_json_snapshot!("sample_profile", g.catalogue.profile);
}

#[test]
fn the_policy_decides_the_profile_under_any_api_name() {
    let g = generate_with("something-else", PolicyKind::Cloudflare);
    let profile = &g.catalogue.profile;
    assert_eq!(profile.token_env, "SOMETHING_ELSE_API_TOKEN");
    assert_eq!(profile.envelope.payload, "/result");
    assert_eq!(profile.envelope.failure_flag.as_deref(), Some("/success"));
    assert_ne!(profile.envelope, BodyEnvelope::bare());
    let accounts = profile.accounts.as_ref().expect("accounts are filled");
    assert_eq!(
        accounts.args,
        ["account_id", "accountId", "account_identifier"]
    );
    // The arguments the schemas make optional are the ones the profile fills.
    let schema = input_schema(&g, "rulesets_list");
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    assert!(
        !required.iter().any(|r| r == "account_or_zone_id"),
        "{schema}"
    );
    let lib = lib_rs(&g);
    for want in [
        "api: \"something-else\"",
        "accounts: AccountFill::FromList(AccountList {",
        "envelope: BodyEnvelope {",
        "failure_flag: Some(\"/success\"),",
        "..Profile::generic(\"SOMETHING_ELSE_API_TOKEN\")",
    ] {
        assert!(lib.contains(want), "lib.rs lacks {want:?}:\n{lib}");
    }
}

#[test]
fn a_generic_policy_under_the_flagship_name_gets_the_generic_profile() {
    let g = generate_with("cloudflare", PolicyKind::Generic);
    // Only the spec's server, as any API gets it.
    let want = Profile {
        base_url: Some("https://api.cloudflare.com/client/v4".to_owned()),
        // Inferred from the spec, as for any API: `page` and the documented
        // `result_info.total_pages`.
        pagination: Pagination::PageNumber {
            param: "page".into(),
            page: "/result_info/page".into(),
            total_pages: "/result_info/total_pages".into(),
        },
        ..Profile::generic("cloudflare")
    };
    assert_eq!(without_security(&g.catalogue.profile), want);
    // The spec's one scheme, by the generic rules.
    let schemes = &g.catalogue.profile.schemes;
    assert_eq!(schemes.len(), 1);
    assert_eq!(schemes[0].env, ["CLOUDFLARE_API_TOKEN"]);
    assert_eq!(g.catalogue.profile.security, vec![vec![0]]);
    assert_eq!(g.catalogue.profile.primary, Some(0));
    let lib = lib_rs(&g);
    assert!(
        lib.contains("base_url: Some(\"https://api.cloudflare.com/client/v4\"),"),
        "{lib}"
    );
    assert!(
        lib.contains("..Profile::generic(\"CLOUDFLARE_API_TOKEN\")"),
        "{lib}"
    );
    for unwanted in [
        "BodyEnvelope",
        "AccountFill",
        "MergedSelector",
        "Refusals",
        "Identity",
    ] {
        assert!(!lib.contains(unwanted), "lib.rs has {unwanted}:\n{lib}");
    }
}

#[test]
fn the_emitted_profile_is_deterministic() {
    let a = lib_rs(&generate_with("x", PolicyKind::Cloudflare));
    let b = lib_rs(&generate_with("x", PolicyKind::Cloudflare));
    assert_eq!(a, b);
}

/// A one-operation spec with the given `servers` YAML, generated under the
/// generic policy.
fn generate_servers(
    servers: &str,
    spec_url: Option<&str>,
) -> toolforge_generator::Result<Generated> {
    let mut config: ForgeConfig = common::config();
    config.api = "example".to_owned();
    config.policy = PolicyKind::Generic;
    config.spec.url = spec_url.map(str::to_owned);
    let spec = format!(
        "openapi: 3.0.3\ninfo: {{title: Example, version: '1'}}\n{servers}\npaths:\n  /items:\n    get:\n      operationId: listItems\n      responses:\n        '200': {{description: ok}}\n"
    );
    generate(
        spec.as_bytes(),
        "example.yaml",
        &config,
        &common::layout(&config),
    )
}

fn readme_md(g: &Generated) -> String {
    let file = g.files.iter().find(|f| f.path == "README.md").unwrap();
    String::from_utf8(file.contents.clone()).unwrap()
}

#[test]
fn server_variables_are_emitted_into_the_profile() {
    let g = generate_servers(
        "servers:\n  - url: 'https://{region}.api.example.com/{basePath}'\n    variables:\n      region: {default: eu, enum: [eu, us]}\n      basePath: {default: v1}",
        None,
    )
    .unwrap();
    let p = &g.catalogue.profile;
    assert_eq!(
        p.base_url.as_deref(),
        Some("https://{region}.api.example.com/{basePath}")
    );
    assert_eq!(p.server_vars.len(), 2);
    let lib = lib_rs(&g);
    for want in [
        "use toolforge_runtime::profile::ServerVar;",
        "base_url: Some(\"https://{region}.api.example.com/{basePath}\"),",
        "name: \"region\",",
        "default: \"eu\",",
        "allowed: &[\"eu\", \"us\"],",
        "name: \"basePath\",",
        "allowed: &[],",
    ] {
        assert!(lib.contains(want), "lib.rs lacks {want:?}:\n{lib}");
    }
    let readme = readme_md(&g);
    assert!(readme.contains("## Upstream"), "{readme}");
    assert!(
        readme.contains("`region` = `eu` (one of `eu`, `us`), `basePath` = `v1`"),
        "{readme}"
    );
    assert!(readme.contains("--server-var name=value"), "{readme}");
}

#[test]
fn relative_or_missing_servers_need_upstream() {
    let g = generate_servers("servers:\n  - url: /v1", None).unwrap();
    assert_eq!(g.catalogue.profile.base_url.as_deref(), Some("/v1"));
    let readme = readme_md(&g);
    assert!(
        readme.contains("`/v1` is relative") && readme.contains("needs `--upstream URL`"),
        "{readme}"
    );
    let g = generate_servers(
        "servers:\n  - url: /v1",
        Some("https://example.com/specs/openapi.yaml"),
    )
    .unwrap();
    assert_eq!(
        g.catalogue.profile.base_url.as_deref(),
        Some("https://example.com/v1")
    );
    assert!(!readme_md(&g).contains("## Upstream"));
    let g = generate_servers("", None).unwrap();
    assert_eq!(
        without_security(&g.catalogue.profile),
        Profile::generic("example")
    );
    assert!(readme_md(&g).contains("declares no server"));
    let g = generate_servers("servers:\n  - url: http://api.example.com", None).unwrap();
    let readme = readme_md(&g);
    assert!(readme.contains("plain http"), "{readme}");
    assert!(readme.contains("--allow-loopback-upstream"), "{readme}");
}

#[test]
fn bad_servers_are_typed_errors_with_pointers() {
    let err =
        generate_servers("servers:\n  - url: 'https://{region}.example.com'", None).unwrap_err();
    assert_eq!(err.kind(), "Invalid");
    assert_eq!(err.pointer(), Some("/servers/0/url"));
    let err = generate_servers(
        "servers:\n  - url: 'https://{region}.example.com'\n    variables:\n      region: {default: ap, enum: [eu, us]}",
        None,
    )
    .unwrap_err();
    assert_eq!(err.pointer(), Some("/servers/0/variables/region/enum"));
    let err = generate_servers("servers:\n  - url: 'ftp://example.com'", None).unwrap_err();
    assert_eq!(err.pointer(), Some("/servers/0/url"));
    assert!(err.to_string().contains("`ftp`"), "{err}");
}
