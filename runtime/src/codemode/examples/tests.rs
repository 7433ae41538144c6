//! The examples come from the tools served, never from another API.

use super::Examples;
use crate::catalogue::{Method, Route, SharedText, ToolDef};
use crate::profile::{Pagination, Profile};
use crate::request::testing::custom;

fn routes(path: &'static str) -> &'static [Route] {
    Box::leak(Box::new([Route {
        when: None,
        template: path,
    }]))
}

fn get(name: &'static str, product: &'static str, path: &'static str) -> &'static ToolDef {
    custom(|t| {
        t.name = name;
        t.product = product;
        t.method = Method::Get;
        t.routes = routes(path);
        t.params = &[];
    })
}

#[test]
fn a_generic_api_shows_its_own_tag_path_and_fields() {
    let list = custom(|t| {
        t.product = "customers";
        t.method = Method::Get;
        t.routes = routes("/customers");
        t.params = &[];
        t.output_schema = Some(SharedText::Text(
            r##"{"type":"object","properties":{"data":{"type":"array","items":{"$ref":"#/$defs/C"}}},"$defs":{"C":{"properties":{"object":{},"email":{},"id":{}}}}}"##,
        ));
    });
    let one = get("customer_get", "customers", "/customers/{customer}");
    let profile = Profile::generic("TILL");
    let e = Examples::of(&[one, list], &profile);
    assert_eq!(e.tag, "customers");
    assert_eq!(e.list_path, "/customers");
    assert_eq!(e.sample_path, "/customers/abc");
    assert_eq!(
        e.execute,
        r#"async () => { const r = await api.request({ method: "GET", path: "/customers" }); return r.result; }"#
    );
    let paged = Profile {
        pagination: Pagination::NextUrl { next: "/next" },
        ..Profile::generic("TILL")
    };
    let e = Examples::of(&[one, list], &paged);
    assert_eq!(
        e.execute,
        r#"async () => { const all = await api.paginate({ method: "GET", path: "/customers" }, { maxPages: 3 }); return all.items.map(x => ({ id: x.id, object: x.object })); }"#
    );
    for text in [&e.tag, &e.list_path, &e.sample_path, &e.execute] {
        assert!(!text.contains("zone") && !text.contains("dns"), "{text}");
    }
}

#[test]
fn a_profile_example_is_kept_and_an_empty_catalogue_still_has_examples() {
    let own = Profile {
        execute_example: "async () => 1",
        ..Profile::generic("X")
    };
    let e = Examples::of(&[get("pets_list", "pet_store", "/pets")], &own);
    assert_eq!(
        (e.tag.as_str(), e.execute.as_str()),
        ("pet", "async () => 1")
    );
    let e = Examples::of(&[], &Profile::generic("X"));
    assert_eq!((e.tag.as_str(), e.list_path.as_str()), ("api", "/"));
}
