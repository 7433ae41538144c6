//! Name locks: `options.name_lock` entries (`METHOD /path` as written in
//! the new release → old tool name) that keep the names of renamed
//! operations across a release.

use std::collections::BTreeMap;

use super::input::load_document_release;
use super::model::{DiffReport, LockEntry, Release};
use super::{DiffError, DiffOptions, diff};
use crate::config::ForgeConfig;
use crate::load::Document;

/// One entry per renamed tool, keyed by the new release's `METHOD /path`
/// (the key the generator's name lock reads), in key order.
pub fn lock_entries(report: &DiffReport) -> Vec<LockEntry> {
    let mut out: Vec<LockEntry> = report
        .renamed
        .iter()
        .map(|r| LockEntry {
            key: format!("{} {}", r.method, r.new_path),
            name: r.old_name.clone(),
        })
        .collect();
    out.sort();
    out
}

/// The new release regenerated with the name lock extended until no
/// operation present in both releases changes name (or `max_rounds`
/// regenerations have run: a locked name can push another tool off its
/// name, which the next round locks in turn).
#[derive(Debug, Clone)]
pub struct Stabilised {
    /// The new release generated with the extended lock.
    pub release: Release,
    /// Entries added to the configuration's lock, in key order.
    pub added: Vec<LockEntry>,
    /// The whole lock (existing plus added).
    pub lock: BTreeMap<String, String>,
}

/// Extends `config`'s name lock so that `new` keeps the names `old` gave
/// to the operations both have. Existing lock entries are never changed:
/// a deliberate lock wins over an old name.
///
/// # Errors
/// [`DiffError::Generate`] when the generator refuses `new`.
pub fn stabilise(
    old: &Release,
    new: &Document,
    config: &ForgeConfig,
    label: &str,
    max_rounds: usize,
) -> Result<Stabilised, DiffError> {
    let mut config = config.clone();
    let mut added: BTreeMap<String, String> = BTreeMap::new();
    let mut round = 0;
    loop {
        let release = load_document_release(new, &config, label)?;
        let report = diff(old, &release, &DiffOptions::default());
        let fresh: Vec<LockEntry> = lock_entries(&report)
            .into_iter()
            .filter(|e| !config.options.name_lock.contains_key(&e.key))
            .collect();
        if fresh.is_empty() || round >= max_rounds {
            return Ok(Stabilised {
                release,
                added: added
                    .into_iter()
                    .map(|(key, name)| LockEntry { key, name })
                    .collect(),
                lock: config.options.name_lock,
            });
        }
        for e in fresh {
            config
                .options
                .name_lock
                .insert(e.key.clone(), e.name.clone());
            added.insert(e.key, e.name);
        }
        round += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::diff::load_release;
    use crate::config::PolicyKind;
    use crate::load::load;

    fn op(path: &str, param: &str) -> String {
        format!(
            r#""{path}": {{"parameters": [{{"name": "{param}", "in": "path", "required": true,
                "schema": {{"type": "string"}}}}],
              "patch": {{"responses": {{"200": {{"description": "ok"}}}}}}}}"#
        )
    }

    fn spec(ops: &[String]) -> Vec<u8> {
        format!(
            r#"{{"openapi": "3.0.3", "info": {{"title": "t", "version": "1"}}, "paths": {{{}}}}}"#,
            ops.join(",")
        )
        .into_bytes()
    }

    fn old() -> Vec<u8> {
        spec(&[op("/zones/{zone_id}/settings", "zone_id")])
    }

    /// The new release renames the placeholder and adds the account variant,
    /// so the zone operation loses its bare name.
    fn new() -> Vec<u8> {
        spec(&[
            op("/zones/{identifier}/settings", "identifier"),
            op("/accounts/{account_id}/settings", "account_id"),
        ])
    }

    #[test]
    fn the_lock_keeps_old_names_under_the_new_key() {
        let mut config = ForgeConfig::generic("t", "x.json".as_ref(), "");
        config.policy = PolicyKind::Cloudflare;
        let old = load_release(&old(), "old.json", &config).unwrap();
        let new_doc = load(&new(), "new.json").unwrap();
        let plain = load_document_release(&new_doc, &config, "new.json").unwrap();
        let report = diff(&old, &plain, &DiffOptions::default());
        assert_eq!(report.summary.tools_renamed, 1);
        assert_eq!(
            lock_entries(&report),
            vec![LockEntry {
                key: "PATCH /zones/{identifier}/settings".into(),
                name: "settings_edit".into()
            }]
        );

        let s = stabilise(&old, &new_doc, &config, "new.json", 4).unwrap();
        assert_eq!(s.added.len(), 1);
        let report = diff(&old, &s.release, &DiffOptions::default());
        assert_eq!(report.summary.tools_renamed, 0);
        assert_eq!(report.stability.share, 1.0);
    }

    #[test]
    fn deliberate_locks_are_not_overridden() {
        let mut config = ForgeConfig::generic("t", "x.json".as_ref(), "");
        config.policy = PolicyKind::Cloudflare;
        let old = load_release(&old(), "old.json", &config).unwrap();
        config.options.name_lock.insert(
            "PATCH /zones/{identifier}/settings".into(),
            "zone_settings_patch".into(),
        );
        let new_doc = load(&new(), "new.json").unwrap();
        let s = stabilise(&old, &new_doc, &config, "new.json", 4).unwrap();
        assert!(s.added.is_empty());
        assert!(
            s.release
                .tools
                .iter()
                .any(|t| t.name == "zone_settings_patch")
        );
    }
}
