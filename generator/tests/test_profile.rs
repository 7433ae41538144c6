//! The API profile: decided by forge.json's `policy` (never by the `api`
//! name), recorded in the IR and emitted into `lib.rs` as static data.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use toolforge_generator::config::{ForgeConfig, PolicyKind};
use toolforge_generator::ir::{BodyShape, Profile};
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
    assert_eq!(profile.envelope, BodyShape::SuccessResult);
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
        "envelope: EnvelopeKind::SuccessResult,",
        "..Profile::generic(\"SOMETHING_ELSE_API_TOKEN\")",
    ] {
        assert!(lib.contains(want), "lib.rs lacks {want:?}:\n{lib}");
    }
}

#[test]
fn a_generic_policy_under_the_flagship_name_gets_the_generic_profile() {
    let g = generate_with("cloudflare", PolicyKind::Generic);
    assert_eq!(g.catalogue.profile, Profile::generic("cloudflare"));
    let lib = lib_rs(&g);
    assert!(
        lib.contains("profile: Profile::generic(\"CLOUDFLARE_API_TOKEN\"),"),
        "{lib}"
    );
    for unwanted in ["EnvelopeKind", "AccountFill", "MergedSelector", "Refusals"] {
        assert!(!lib.contains(unwanted), "lib.rs has {unwanted}:\n{lib}");
    }
}

#[test]
fn the_emitted_profile_is_deterministic() {
    let a = lib_rs(&generate_with("x", PolicyKind::Cloudflare));
    let b = lib_rs(&generate_with("x", PolicyKind::Cloudflare));
    assert_eq!(a, b);
}
