//! Scoped URLs (`/mcp/accounts/{account_id}`): the Cloudflare policy
//! declares its two; forge.json `scoped_paths` replaces them for any API
//! (placeholders are the spec's path-parameter names, checked against the
//! operations), and lib.rs carries them as static data.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use toolforge_generator::config::{ForgeConfig, PolicyKind};
use toolforge_generator::ir::ScopedPath;
use toolforge_generator::{GenerateError, Generated, generate};

fn generate_with(policy: PolicyKind, scoped: Option<&[&str]>) -> Result<Generated, GenerateError> {
    let mut config: ForgeConfig = common::config();
    config.policy = policy;
    config.scoped_paths = scoped.map(|s| s.iter().map(|p| (*p).to_owned()).collect());
    let spec = common::repo().join(&config.spec.path);
    let bytes = std::fs::read(&spec).unwrap();
    generate(&bytes, "sample.yaml", &config, &common::layout(&config))
}

fn lib_rs(g: &Generated) -> String {
    let file = g.files.iter().find(|f| f.path == "src/lib.rs").unwrap();
    String::from_utf8(file.contents.clone()).unwrap()
}

#[test]
fn the_cloudflare_policy_scopes_accounts_and_zones() {
    let g = generate_with(PolicyKind::Cloudflare, None).unwrap();
    let paths = &g.catalogue.profile.scoped_paths;
    assert_eq!(
        paths,
        &[
            ScopedPath {
                template: "/accounts/{account_id}".into(),
                check: Some("/accounts/{account_id}".into()),
            },
            ScopedPath {
                template: "/accounts/{account_id}/zones/{zone_id}".into(),
                check: Some("/zones/{zone_id}".into()),
            },
        ]
    );
    assert!(lib_rs(&g).contains("template: \"/accounts/{account_id}/zones/{zone_id}\""));
    // The generic policy declares none, and emits nothing for them.
    let g = generate_with(PolicyKind::Generic, None).unwrap();
    assert!(g.catalogue.profile.scoped_paths.is_empty());
    assert!(!lib_rs(&g).contains("scoped_paths"));
}

#[test]
fn forge_json_scoped_paths_replace_the_policys() {
    let g = generate_with(PolicyKind::Generic, Some(&["/zones/{zone_id}"])).unwrap();
    assert_eq!(
        g.catalogue.profile.scoped_paths,
        [ScopedPath {
            template: "/zones/{zone_id}".into(),
            // The spec has `GET /zones/{zone_id}`: it is the check.
            check: Some("/zones/{zone_id}".into()),
        }]
    );
    assert!(lib_rs(&g).contains("template: \"/zones/{zone_id}\""));
    let g = generate_with(PolicyKind::Cloudflare, Some(&["/tenants/{zone_id}"])).unwrap();
    assert_eq!(
        g.catalogue.profile.scoped_paths,
        [ScopedPath {
            template: "/tenants/{zone_id}".into(),
            check: None,
        }]
    );
}

#[test]
fn scoped_paths_that_cannot_bind_a_session_are_refused() {
    for (bad, says) in [
        ("accounts/{account_id}", "must start with `/`"),
        ("/accounts", "names no path parameter"),
        (
            "/accounts/{nope}",
            "no operation has the path parameter `nope`",
        ),
        ("/accounts/{account_id}/", "must be a literal"),
        ("/acc%20ounts/{account_id}", "must be a literal"),
        ("/accounts/{account-id}x", "must be a literal"),
        ("/accounts/{a b}", "is not a `{name}` placeholder"),
    ] {
        let err = generate_with(PolicyKind::Generic, Some(&[bad]))
            .err()
            .unwrap_or_else(|| panic!("{bad} was accepted"))
            .to_string();
        assert!(err.contains("/scoped_paths/0"), "{bad}: {err}");
        assert!(err.contains(says), "{bad}: {err}");
    }
}
