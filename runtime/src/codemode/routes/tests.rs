use super::*;
use crate::catalogue::Route;
use crate::profile::testing::{ENVELOPED, GENERIC};
use crate::request::testing::tool;

fn table() -> RouteTable {
    let list = tool(
        "dns_records_list",
        Method::Get,
        &[Route {
            when: None,
            template: "/zones/{zone_id}/dns_records",
        }],
        &[],
        None,
    );
    let get = tool(
        "dns_records_get",
        Method::Get,
        &[Route {
            when: None,
            template: "/zones/{zone_id}/dns_records/{dns_record_id}",
        }],
        &[],
        None,
    );
    let delete = tool(
        "dns_records_delete",
        Method::Delete,
        &[Route {
            when: None,
            template: "/zones/{zone_id}/dns_records/{dns_record_id}",
        }],
        &[],
        None,
    );
    let export = tool(
        "dns_records_export",
        Method::Get,
        &[Route {
            when: None,
            template: "/zones/{zone_id}/dns_records/export",
        }],
        &[],
        None,
    );
    let merged = tool(
        "rulesets_list",
        Method::Get,
        &[
            Route {
                when: Some(("account_or_zone", "accounts")),
                template: "/accounts/{account_or_zone_id}/rulesets",
            },
            Route {
                when: Some(("account_or_zone", "zones")),
                template: "/zones/{account_or_zone_id}/rulesets",
            },
        ],
        &[],
        None,
    );
    let file = tool(
        "file_get",
        Method::Get,
        &[Route {
            when: None,
            template: "/files/{name}.json",
        }],
        &[],
        None,
    );
    RouteTable::new([list, get, delete, export, merged, file], &ENVELOPED, |t| {
        t.name != "dns_records_delete"
    })
}

#[test]
fn concrete_paths_match_their_templates() {
    let t = table();
    let m = t.resolve("get", "/zones/z1/dns_records").unwrap();
    assert_eq!(m.tool.name, "dns_records_list");
    assert_eq!(
        m.segments,
        vec![
            ("zones".to_owned(), None),
            ("z1".to_owned(), Some("zone_id")),
            ("dns_records".to_owned(), None)
        ]
    );
    // A trailing slash is tolerated; the most specific template wins.
    let m = t.resolve("GET", "/zones/z1/dns_records/export/").unwrap();
    assert_eq!(m.tool.name, "dns_records_export");
    let m = t.resolve("GET", "/zones/z1/dns_records/r%2F1").unwrap();
    assert_eq!(m.tool.name, "dns_records_get");
    assert_eq!(m.segments[3].0, "r/1");
    let m = t.resolve("GET", "/accounts/a1/rulesets").unwrap();
    assert_eq!(m.selector, Some(("account_or_zone", "accounts")));
    assert!(m.is_account_arg(&ENVELOPED, "account_or_zone_id"));
    assert!(!m.is_account_arg(&GENERIC, "account_or_zone_id"));
    let m = t.resolve("GET", "/zones/z/rulesets").unwrap();
    assert!(!m.is_account_arg(&ENVELOPED, "account_or_zone_id"));
    assert_eq!(
        t.resolve("GET", "/files/a.json").unwrap().tool.name,
        "file_get"
    );
    assert!(t.resolve("GET", "/files/.json").is_err());
}

#[test]
fn bad_paths_are_refused_with_a_reason() {
    let t = table();
    for (path, want) in [
        ("https://evil.example/zones", "is a URL"),
        ("//evil.example/zones", "is a URL"),
        ("zones", "must start with `/`"),
        ("/zones?per_page=1", "query"),
        ("/zones//dns_records", "empty segment"),
        ("/zones/../accounts", "`..`"),
        ("/zones/%2e%2e/x", "`..`"),
        ("/", "names no resource"),
    ] {
        let err = t.resolve("GET", path).unwrap_err().to_string();
        assert!(err.contains(want), "{path}: {err}");
    }
    let err = t.resolve("FETCH", "/zones").unwrap_err();
    assert!(matches!(err, RouteError::Method { .. }));
}

#[test]
fn unknown_paths_name_close_matches() {
    let t = table();
    let err = t
        .resolve("GET", "/zones/z1/dns_record")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("close matches: GET /zones/{zone_id}/dns_records"),
        "{err}"
    );
    let err = t.resolve("POST", "/zones/z1/dns_records").unwrap_err();
    assert_eq!(
        err,
        RouteError::WrongMethod {
            method: "POST".into(),
            shown: "/zones/z1/dns_records".into(),
            allowed: "GET".into()
        }
    );
    let err = t.resolve("DELETE", "/zones/z/dns_records/r").unwrap_err();
    assert!(
        matches!(
            err,
            RouteError::Hidden {
                tool: "dns_records_delete",
                ..
            }
        ),
        "{err}"
    );
    let err = t
        .resolve("GET", "/account/a/rulesets")
        .unwrap_err()
        .to_string();
    assert!(err.contains("GET /accounts/{account_id}/rulesets"), "{err}");
}
