//! forge.json `skill_groups`: the OAuth consent page's skills as tool-name
//! patterns, expanded against the generated tools and carried by lib.rs;
//! without it nothing is emitted (one skill per product).
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use toolforge_generator::config::ForgeConfig;
use toolforge_generator::ir::SkillGroup;
use toolforge_generator::{GenerateError, Generated, generate};

fn generate_with(groups: Option<&[(&str, &[&str])]>) -> Result<Generated, GenerateError> {
    let mut config: ForgeConfig = common::config();
    config.skill_groups = groups.map(|g| {
        g.iter()
            .map(|(name, patterns)| {
                (
                    (*name).to_owned(),
                    patterns.iter().map(|p| (*p).to_owned()).collect(),
                )
            })
            .collect::<BTreeMap<_, _>>()
    });
    let spec = common::repo().join(&config.spec.path);
    let bytes = std::fs::read(&spec).unwrap();
    generate(&bytes, "sample.yaml", &config, &common::layout(&config))
}

fn lib_rs(g: &Generated) -> String {
    let file = g.files.iter().find(|f| f.path == "src/lib.rs").unwrap();
    String::from_utf8(file.contents.clone()).unwrap()
}

#[test]
fn patterns_name_the_tools_of_each_skill() {
    let g = generate_with(Some(&[
        ("dns", &["dns_records_*"]),
        ("edge", &["workers_*", "r2_*_list"]),
    ]))
    .unwrap();
    let groups = &g.catalogue.profile.skill_groups;
    assert_eq!(groups.len(), 2);
    let dns: &SkillGroup = &groups[0];
    assert_eq!(dns.name, "dns");
    assert!(!dns.tools.is_empty());
    assert!(
        dns.tools.iter().all(|t| t.starts_with("dns_records_")),
        "{dns:?}"
    );
    let edge = &groups[1];
    assert!(
        edge.tools.iter().any(|t| t.starts_with("workers_")),
        "{edge:?}"
    );
    assert!(
        edge.tools
            .iter()
            .all(|t| t.starts_with("workers_") || (t.starts_with("r2_") && t.ends_with("_list"))),
        "{edge:?}"
    );
    let lib = lib_rs(&g);
    assert!(lib.contains("SkillGroup {"), "{lib}");
    assert!(lib.contains("name: \"edge\""), "{lib}");
    // Without the field nothing is emitted.
    let plain = generate_with(None).unwrap();
    assert!(plain.catalogue.profile.skill_groups.is_empty());
    assert!(!lib_rs(&plain).contains("skill_groups"));
}

#[test]
fn skills_that_would_mislead_the_consent_page_are_refused() {
    for (groups, says) in [
        (
            &[("dns", &["nothing_*"][..])][..],
            "/skill_groups/dns/0: `nothing_*` matches no tool",
        ),
        (
            &[("dns", &[][..])][..],
            "/skill_groups/dns: lists no tool pattern",
        ),
        (
            &[("DNS!", &["dns_*"][..])][..],
            "/skill_groups/DNS!: a skill name",
        ),
    ] {
        let err = generate_with(Some(groups))
            .err()
            .unwrap_or_else(|| panic!("{groups:?} was accepted"))
            .to_string();
        assert!(err.contains(says), "{err}");
    }
}
