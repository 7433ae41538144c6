#![allow(clippy::unwrap_used, clippy::panic)]
//! `whoami` for a generic API that declares its identity endpoint in
//! forge.json (`forge.larder.json`: `GET /me`, `/id`, `/display_name`,
//! `account`): an in-process server core over the generated larder
//! catalogue, against a loopback upstream that echoes the credential. The
//! probe is sent with the `/me` operation's credential (the OIDC bearer),
//! the result is `account:<id>` with the display name, and the credential
//! is nowhere in it; without the setting a generic API lists no `whoami`.

use larder_tools::CATALOGUE;
use serde_json::{Value, json};
use toolforge_runtime::catalogue::Catalogue;
use toolforge_runtime::credential::Credential;
use toolforge_runtime::profile::Profile;
use toolforge_runtime::server::Core;
use toolforge_tests::in_process;
use toolforge_tests::upstream::{Reply, Upstream};

const OIDC: &str = "larder-oidc-secret-Vb72nq4E";
const ACCOUNT: &str = "acc_7d2e19b0";

fn core(catalogue: &'static Catalogue, upstream: &Upstream) -> Core {
    in_process::core(catalogue, upstream, false, "set `LARDER_OIDC`").unwrap()
}

/// The server's credential: only `LARDER_OIDC` is set.
fn credential() -> Credential {
    in_process::credential(&CATALOGUE, "LARDER_OIDC", OIDC).unwrap()
}

#[tokio::test]
async fn a_declared_identity_endpoint_names_the_account() {
    let upstream = Upstream::start(|req| {
        let auth = req.header("authorization").unwrap_or_default().to_owned();
        if req.path() == "/me" && auth == format!("Bearer {OIDC}") {
            Reply::json(
                200,
                &json!({"id": ACCOUNT, "email": "sam@household.example", "display_name": "Sam", "household": auth}),
            )
        } else {
            Reply::json(401, &json!({"message": format!("bad credential {auth}")}))
        }
    })
    .unwrap();
    let core = core(&CATALOGUE, &upstream);
    assert!(core.tool("whoami").is_some(), "whoami is listed");
    let result = core
        .call("whoami", None, Some(&credential()))
        .await
        .unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"],
        json!({"identity": format!("account:{ACCOUNT}"), "name": "Sam"}),
        "{result}"
    );
    assert!(!result.to_string().contains(OIDC), "{result}");
    let paths: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.path().to_owned())
        .collect();
    assert_eq!(paths, ["/me"]);

    // Arguments are refused: whoami takes none.
    let mut args = serde_json::Map::new();
    args.insert("x".into(), Value::Bool(true));
    let refused = core
        .call("whoami", Some(args), Some(&credential()))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true));
}

#[tokio::test]
async fn without_an_identity_there_is_no_whoami() {
    let upstream = Upstream::start(|_| Reply::json(200, &json!({}))).unwrap();
    let generic: &'static Catalogue = Box::leak(Box::new(Catalogue {
        api: "larder",
        profile: Profile {
            identity: None,
            ..CATALOGUE.profile
        },
        products: CATALOGUE.products,
        source: CATALOGUE.source,
        spec: "",
        skills: &[],
    }));
    let core = core(generic, &upstream);
    assert!(core.tool("whoami").is_none());
    assert!(core.call("whoami", None, None).await.is_err());
}
