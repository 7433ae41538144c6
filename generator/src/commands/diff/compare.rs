//! Matching two releases operation by operation and classifying the tools.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::model::{
    AddedTool, ChangeKind, ChangedTool, DiffReport, HintChange, PermissionSummary, ProductCounts,
    Release, ReleaseSide, ReleaseSkipped, ReleaseTool, RemovedTool, RenamedTool, SchemaDelta,
    Stability, Summary, Warning, WarningKind,
};
use super::{DiffOptions, operation_key};
use crate::schema::inline_shared;

/// The identity rule, as recorded in the JSON report.
const IDENTITY: &str = "method + path with every {placeholder} written {} (operationId is not used; equivalent templates within one release keep their raw paths)";

/// One operation of a release.
#[derive(Clone, Copy)]
enum Entry<'a> {
    Tool(&'a ReleaseTool),
    Skipped(&'a ReleaseSkipped),
}

impl Entry<'_> {
    fn method(&self) -> &str {
        match self {
            Entry::Tool(t) => &t.method,
            Entry::Skipped(s) => &s.method,
        }
    }

    fn path(&self) -> &str {
        match self {
            Entry::Tool(t) => &t.path,
            Entry::Skipped(s) => &s.path,
        }
    }

    fn operation_id(&self) -> &str {
        match self {
            Entry::Tool(t) => &t.operation_id,
            Entry::Skipped(s) => &s.operation_id,
        }
    }
}

/// Operations of a release by identity key.
fn index(release: &Release) -> BTreeMap<String, Entry<'_>> {
    let entries: Vec<Entry<'_>> = release
        .tools
        .iter()
        .map(Entry::Tool)
        .chain(release.skipped.iter().map(Entry::Skipped))
        .collect();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for e in &entries {
        *counts
            .entry(operation_key(e.method(), e.path()))
            .or_default() += 1;
    }
    let mut out = BTreeMap::new();
    for e in entries {
        let key = operation_key(e.method(), e.path());
        let key = if counts.get(&key).copied().unwrap_or(0) > 1 {
            format!("{} {}", e.method(), e.path())
        } else {
            key
        };
        out.entry(key).or_insert(e);
    }
    out
}

fn side(release: &Release) -> ReleaseSide {
    let distinct: BTreeSet<&str> = release
        .tools
        .iter()
        .flat_map(|t| t.permissions.iter().map(String::as_str))
        .collect();
    ReleaseSide {
        label: release.label.clone(),
        api: release.api.clone(),
        kind: release.kind,
        operations: release.tools.len() + release.skipped.len(),
        tools: release.tools.len(),
        skipped: release.skipped.len(),
        tools_with_permissions: release
            .tools
            .iter()
            .filter(|t| !t.permissions.is_empty())
            .count(),
        distinct_permissions: distinct.len(),
    }
}

/// Keywords whose value maps names to schemas (so the keys are not keywords).
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// A schema without its `description` and `title` texts.
fn strip_docs(schema: &Value) -> Value {
    match schema {
        Value::Object(obj) => {
            let mut out = Map::new();
            for (k, v) in obj {
                if matches!(k.as_str(), "description" | "title") && v.is_string() {
                    continue;
                }
                let v = match v {
                    Value::Object(m) if SCHEMA_MAPS.contains(&k.as_str()) => Value::Object(
                        m.iter()
                            .map(|(name, s)| (name.clone(), strip_docs(s)))
                            .collect(),
                    ),
                    other => strip_docs(other),
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(strip_docs).collect()),
        other => other.clone(),
    }
}

fn names_of(schema: &Value, key: &str) -> BTreeSet<String> {
    match schema.get(key) {
        Some(Value::Object(m)) => m.keys().cloned().collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => BTreeSet::new(),
    }
}

fn minus(a: &BTreeSet<String>, b: &BTreeSet<String>) -> Vec<String> {
    a.difference(b).cloned().collect()
}

/// How deep [`schema_delta`] follows nested properties and array items.
const DELTA_DEPTH: usize = 4;

/// A node without the parts [`walk`] compares itself.
fn rest_of(schema: &Value, descend_items: bool) -> Value {
    let mut s = schema.clone();
    if let Value::Object(obj) = &mut s {
        obj.remove("required");
        obj.remove("properties");
        if descend_items {
            obj.remove("items");
        }
    }
    s
}

/// A node whose changes [`walk`] can describe (object properties or array items).
fn has_structure(schema: &Value) -> bool {
    schema.get("properties").is_some_and(Value::is_object)
        || schema.get("items").is_some_and(Value::is_object)
}

/// Records the differences of two doc-stripped schemas under `prefix`
/// (`result.items[].name`): properties added and removed, required flags,
/// and `other` for anything else.
fn walk(old: &Value, new: &Value, prefix: &str, depth: usize, d: &mut SchemaDelta) {
    let name = |p: &str| format!("{prefix}{p}");
    let (po, pn) = (names_of(old, "properties"), names_of(new, "properties"));
    let (ro, rn) = (names_of(old, "required"), names_of(new, "required"));
    for p in pn.difference(&po) {
        if rn.contains(p) {
            d.properties_added_required.push(name(p));
        }
        d.properties_added.push(name(p));
    }
    d.properties_removed
        .extend(po.difference(&pn).map(|p| name(p)));
    for p in po.intersection(&pn) {
        match (ro.contains(p), rn.contains(p)) {
            (false, true) => d.required_added.push(name(p)),
            (true, false) => d.required_removed.push(name(p)),
            _ => {}
        }
        let (a, b) = (&old["properties"][p], &new["properties"][p]);
        if a == b {
            continue;
        }
        if depth > 0 && has_structure(a) && has_structure(b) {
            walk(a, b, &format!("{}.", name(p)), depth - 1, d);
        } else {
            d.other = true;
        }
    }
    let (io, in_) = (old.get("items"), new.get("items"));
    let descend = depth > 0 && io.is_some_and(has_structure) && in_.is_some_and(has_structure);
    if descend
        && let (Some(a), Some(b)) = (io, in_)
        && a != b
    {
        let items = format!("{}[].", prefix.trim_end_matches('.'));
        walk(a, b, &items, depth - 1, d);
    }
    if rest_of(old, descend) != rest_of(new, descend) {
        d.other = true;
    }
}

/// Structural delta of two schemas that differ beyond description text.
fn schema_delta(old: &Value, new: &Value) -> SchemaDelta {
    let mut d = SchemaDelta::default();
    walk(&strip_docs(old), &strip_docs(new), "", DELTA_DEPTH, &mut d);
    d
}

/// `Some(delta)` for a real change, `None` for none; the flag says whether
/// descriptions alone differ.
fn compare_schema(old: Option<&Value>, new: Option<&Value>) -> (Option<SchemaDelta>, bool) {
    // Where repeated subschemas sit (`$defs` or inline) is not a change.
    let old = old.map(inline_shared);
    let new = new.map(inline_shared);
    let (old, new) = (old.as_ref(), new.as_ref());
    match (old, new) {
        (None, None) => (None, false),
        (Some(_), None) | (None, Some(_)) => {
            let presence = if new.is_some() { "added" } else { "removed" };
            let delta = SchemaDelta {
                presence: Some(presence.to_string()),
                ..SchemaDelta::default()
            };
            (Some(delta), false)
        }
        (Some(a), Some(b)) if a == b => (None, false),
        (Some(a), Some(b)) if strip_docs(a) == strip_docs(b) => (None, true),
        (Some(a), Some(b)) => (Some(schema_delta(a, b)), false),
    }
}

fn set(v: &[String]) -> BTreeSet<String> {
    v.iter().cloned().collect()
}

/// The change of a tool present in both releases, and whether it changed
/// in description text only.
fn compare_tool(old: &ReleaseTool, new: &ReleaseTool) -> (Option<ChangedTool>, bool) {
    let (input, input_docs) = compare_schema(Some(&old.input_schema), Some(&new.input_schema));
    let (output, output_docs) =
        compare_schema(old.output_schema.as_ref(), new.output_schema.as_ref());
    let (po, pn) = (set(&old.permissions), set(&new.permissions));
    let permissions_added = minus(&pn, &po);
    let permissions_removed = minus(&po, &pn);
    let hints: Vec<HintChange> = old
        .annotations
        .named()
        .iter()
        .zip(new.annotations.named())
        .filter(|((_, a), (_, b))| a != b)
        .map(|((hint, a), (_, b))| HintChange {
            hint: (*hint).to_string(),
            old: *a,
            new: b,
        })
        .collect();
    let mut kinds = Vec::new();
    if input.is_some() {
        kinds.push(ChangeKind::InputSchema);
    }
    if output.is_some() {
        kinds.push(ChangeKind::OutputSchema);
    }
    if !permissions_added.is_empty() || !permissions_removed.is_empty() {
        kinds.push(ChangeKind::Permissions);
    }
    if !hints.is_empty() {
        kinds.push(ChangeKind::Hints);
    }
    if kinds.is_empty() {
        let docs = input_docs || output_docs || old.description != new.description;
        return (None, docs);
    }
    let changed = ChangedTool {
        name: new.name.clone(),
        product: new.product.clone(),
        method: new.method.clone(),
        path: new.path.clone(),
        kinds,
        input,
        output,
        permissions_added,
        permissions_removed,
        hints,
    };
    (Some(changed), false)
}

fn added(tool: &ReleaseTool, note: Option<String>) -> AddedTool {
    AddedTool {
        name: tool.name.clone(),
        product: tool.product.clone(),
        method: tool.method.clone(),
        path: tool.path.clone(),
        operation_id: tool.operation_id.clone(),
        permissions: tool.permissions.clone(),
        note,
    }
}

fn removed(tool: &ReleaseTool, reason: String, moved_to: Option<String>) -> RemovedTool {
    RemovedTool {
        name: tool.name.clone(),
        product: tool.product.clone(),
        method: tool.method.clone(),
        path: tool.path.clone(),
        operation_id: tool.operation_id.clone(),
        permissions: tool.permissions.clone(),
        reason,
        moved_to,
    }
}

fn share(count: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

fn warnings(s: &Summary, old_tools: usize, p: &PermissionSummary, o: &DiffOptions) -> Vec<Warning> {
    let mut out = Vec::new();
    let removed = share(s.tools_removed, old_tools);
    if removed > o.max_removed_share {
        out.push(Warning {
            kind: WarningKind::RemovedTools,
            count: s.tools_removed,
            total: old_tools,
            share: removed,
            threshold: o.max_removed_share,
            message: format!(
                "{} of {} tools ({:.1}%) are removed, more than the {:.1}% threshold",
                s.tools_removed,
                old_tools,
                removed * 100.0,
                o.max_removed_share * 100.0
            ),
        });
    }
    if p.loss_share > o.max_permission_loss {
        out.push(Warning {
            kind: WarningKind::PermissionLoss,
            count: p.common_pairs_lost,
            total: p.common_pairs_before,
            share: p.loss_share,
            threshold: o.max_permission_loss,
            message: format!(
                "tools present in both releases lose {} of their {} permission entries ({:.1}%), more than the {:.1}% threshold",
                p.common_pairs_lost,
                p.common_pairs_before,
                p.loss_share * 100.0,
                o.max_permission_loss * 100.0
            ),
        });
    }
    out
}

/// Compares two releases.
pub fn diff(old: &Release, new: &Release, options: &DiffOptions) -> DiffReport {
    let (old_ix, new_ix) = (index(old), index(new));
    let keys: BTreeSet<&String> = old_ix.keys().chain(new_ix.keys()).collect();
    let moved: BTreeMap<&str, String> = new_ix
        .iter()
        .filter(|(k, _)| !old_ix.contains_key(*k))
        .filter(|(_, e)| !e.operation_id().is_empty())
        .map(|(_, e)| {
            let target = format!("{} {}", e.method(), e.path());
            (e.operation_id(), target)
        })
        .collect();
    let mut s = Summary::default();
    let mut perms = PermissionSummary::default();
    let (mut common, mut kept) = (0, 0);
    let (mut add, mut rem, mut ren, mut chg) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for key in keys {
        match (old_ix.get(key), new_ix.get(key)) {
            (Some(o), Some(n)) => {
                s.operations_common += 1;
                match (o, n) {
                    (Entry::Tool(a), Entry::Tool(b)) => {
                        common += 1;
                        if a.name == b.name {
                            kept += 1;
                        } else {
                            ren.push(RenamedTool {
                                key: key.clone(),
                                old_name: a.name.clone(),
                                new_name: b.name.clone(),
                                product: b.product.clone(),
                                method: b.method.clone(),
                                old_path: a.path.clone(),
                                new_path: b.path.clone(),
                            });
                        }
                        let (pa, pb) = (set(&a.permissions), set(&b.permissions));
                        perms.common_pairs_before += pa.len();
                        perms.common_pairs_lost += pa.difference(&pb).count();
                        perms.common_pairs_gained += pb.difference(&pa).count();
                        match compare_tool(a, b) {
                            (Some(c), _) => chg.push(c),
                            (None, true) => s.docs_only += 1,
                            (None, false) => {}
                        }
                    }
                    (Entry::Tool(a), Entry::Skipped(sk)) => {
                        let reason = format!("no tool in the new release: {}", sk.reason);
                        rem.push(removed(a, reason, None));
                    }
                    (Entry::Skipped(sk), Entry::Tool(b)) => {
                        let note = format!("had no tool before: {}", sk.reason);
                        add.push(added(b, Some(note)));
                    }
                    (Entry::Skipped(_), Entry::Skipped(_)) => {}
                }
            }
            (Some(o), None) => {
                s.operations_removed += 1;
                if let Entry::Tool(a) = o {
                    let to = moved.get(a.operation_id.as_str()).cloned();
                    rem.push(removed(a, "operation removed".into(), to));
                }
            }
            (None, Some(n)) => {
                s.operations_added += 1;
                if let Entry::Tool(b) = n {
                    add.push(added(b, None));
                }
            }
            (None, None) => {}
        }
    }
    add.sort_by(|a, b| (&a.product, &a.name).cmp(&(&b.product, &b.name)));
    rem.sort_by(|a, b| (&a.product, &a.name).cmp(&(&b.product, &b.name)));
    ren.sort_by(|a, b| (&a.product, &a.new_name).cmp(&(&b.product, &b.new_name)));
    chg.sort_by(|a, b| (&a.product, &a.name).cmp(&(&b.product, &b.name)));
    s.tools_added = add.len();
    s.tools_removed = rem.len();
    s.tools_renamed = ren.len();
    s.tools_changed = chg.len();
    for c in &chg {
        for k in &c.kinds {
            match k {
                ChangeKind::InputSchema => s.changed_input += 1,
                ChangeKind::OutputSchema => s.changed_output += 1,
                ChangeKind::Permissions => s.changed_permissions += 1,
                ChangeKind::Hints => s.changed_hints += 1,
            }
        }
    }
    perms.loss_share = share(perms.common_pairs_lost, perms.common_pairs_before);
    let distinct = |r: &Release| -> BTreeSet<String> {
        r.tools
            .iter()
            .flat_map(|t| t.permissions.iter().cloned())
            .collect()
    };
    let (d_old, d_new) = (distinct(old), distinct(new));
    perms.dropped_entirely = minus(&d_old, &d_new);
    perms.introduced = minus(&d_new, &d_old);
    let mut products: BTreeMap<String, ProductCounts> = BTreeMap::new();
    let mut bump = |product: &str, f: fn(&mut ProductCounts)| {
        let entry = products
            .entry(product.to_string())
            .or_insert_with(|| ProductCounts {
                product: product.to_string(),
                ..ProductCounts::default()
            });
        f(entry);
    };
    add.iter().for_each(|t| bump(&t.product, |p| p.added += 1));
    rem.iter()
        .for_each(|t| bump(&t.product, |p| p.removed += 1));
    ren.iter()
        .for_each(|t| bump(&t.product, |p| p.renamed += 1));
    chg.iter()
        .for_each(|t| bump(&t.product, |p| p.changed += 1));
    let warnings = warnings(&s, old.tools.len(), &perms, options);
    DiffReport {
        identity: IDENTITY.to_string(),
        old: side(old),
        new: side(new),
        summary: s,
        stability: Stability {
            common,
            kept,
            share: if common == 0 {
                1.0
            } else {
                share(kept, common)
            },
        },
        warnings,
        products: products.into_values().collect(),
        added: add,
        removed: rem,
        renamed: ren,
        changed: chg,
        permissions: perms,
        name_lock_added: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::commands::diff::model::{Hints, InputKind};

    const HINTS: Hints = Hints {
        read_only_hint: true,
        destructive_hint: false,
        idempotent_hint: true,
        open_world_hint: true,
    };

    fn tool(name: &str, method: &str, path: &str) -> ReleaseTool {
        ReleaseTool {
            name: name.into(),
            operation_id: name.into(),
            product: "p".into(),
            method: method.into(),
            path: path.into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            output_schema: None,
            annotations: HINTS,
            permissions: vec!["read".into()],
        }
    }

    fn release(tools: Vec<ReleaseTool>) -> Release {
        Release {
            api: "t".into(),
            label: "t".into(),
            kind: InputKind::Catalogue,
            tools,
            skipped: Vec::new(),
        }
    }

    #[test]
    fn placeholder_renames_are_the_same_operation() {
        let old = release(vec![tool("z_get", "GET", "/zones/{identifier}")]);
        let new = release(vec![tool("z_get", "GET", "/zones/{zone_id}")]);
        let r = diff(&old, &new, &DiffOptions::default());
        assert_eq!(r.summary.operations_common, 1);
        assert!(r.added.is_empty() && r.removed.is_empty() && r.changed.is_empty());
        assert_eq!(r.stability.share, 1.0);
    }

    #[test]
    fn description_only_changes_are_counted_not_listed() {
        let old = release(vec![tool("a", "GET", "/a")]);
        let mut t = tool("a", "GET", "/a");
        t.input_schema["properties"]["a"]["description"] = json!("now documented");
        t.description = "new words".into();
        let r = diff(&old, &release(vec![t]), &DiffOptions::default());
        assert!(r.changed.is_empty());
        assert_eq!(r.summary.docs_only, 1);
    }

    #[test]
    fn a_property_named_description_is_not_documentation() {
        let a = json!({"type": "object", "properties": {"description": {"type": "string"}}});
        let b = json!({"type": "object", "properties": {}});
        let (delta, docs) = compare_schema(Some(&a), Some(&b));
        assert!(!docs);
        assert_eq!(delta.unwrap().properties_removed, vec!["description"]);
    }

    #[test]
    fn nested_changes_are_named_by_path() {
        let a = json!({"type": "object", "properties": {"result": {"type": "array", "items": {
            "type": "object", "properties": {"id": {"type": "string"}}}}}});
        let mut b = a.clone();
        b["properties"]["result"]["items"]["properties"]["ttl"] = json!({"type": "integer"});
        b["properties"]["result"]["items"]["required"] = json!(["ttl", "id"]);
        let d = schema_delta(&a, &b);
        assert_eq!(d.properties_added, ["result[].ttl"]);
        assert_eq!(d.properties_added_required, ["result[].ttl"]);
        assert_eq!(d.required_added, ["result[].id"]);
        assert!(!d.other);
        b["properties"]["result"]["items"]["properties"]["id"]["type"] = json!("integer");
        assert!(schema_delta(&a, &b).other);
    }

    #[test]
    fn equivalent_templates_in_one_release_keep_raw_keys() {
        let r = release(vec![tool("a", "GET", "/a/{x}"), tool("b", "GET", "/a/{y}")]);
        let ix = index(&r);
        assert_eq!(ix.len(), 2);
        assert!(ix.contains_key("GET /a/{x}"));
    }

    #[test]
    fn thresholds_are_exclusive() {
        let old = release(
            (0..20)
                .map(|i| tool(&format!("t{i}"), "GET", &format!("/t{i}")))
                .collect(),
        );
        let new = release(old.tools[1..].to_vec());
        let r = diff(&old, &new, &DiffOptions::default());
        assert_eq!(r.summary.tools_removed, 1);
        assert!(r.warnings.is_empty(), "exactly 5% is not more than 5%");
        let new = release(old.tools[2..].to_vec());
        let r = diff(&old, &new, &DiffOptions::default());
        assert_eq!(r.warnings.len(), 1);
        assert_eq!(r.warnings[0].kind, WarningKind::RemovedTools);
    }
}
