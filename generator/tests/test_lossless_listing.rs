//! The input schemas a client is listed say what the untrimmed, unshared
//! schemas say. For each tool, the listed schema with every `$ref` into
//! its `$defs` inlined back (`schema::inline_shared`) is compared node by
//! node with the schema as converted (the `share_subschemas: false`
//! setting, which applies neither sharing nor trims); every difference must
//! be one of the documented lossless rewrites (`schema::Trim`), recognised
//! here on their own terms, and anything else fails. Runs on the committed
//! samples and, when `TOOLFORGE_SHARED` is set, on the full Cloudflare
//! release, and prints the bytes each rewrite saved.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};
use toolforge_generator::config::ForgeConfig;
use toolforge_generator::schema::inline_shared;
use toolforge_generator::{build_catalogue, load};

/// Bytes each rewrite took out, by name.
type Saved = BTreeMap<&'static str, usize>;

/// The sentence forms a description may lose when it restates `default`
/// (as `schema::trim` documents them).
const DEFAULT_FORMS: [&str; 4] = [
    "Defaults to ",
    "The default value is ",
    "The default is ",
    "Default: ",
];

fn text_len(v: &Value) -> usize {
    serde_json::to_string(v).unwrap().len()
}

/// Whether `old` is `new` followed by one sentence restating `default`.
fn restates_default(old: &str, new: &str, default: Option<&Value>) -> bool {
    let Some(default) = default else {
        return false;
    };
    let shown = match default {
        Value::String(s) => s.clone(),
        Value::Number(_) | Value::Bool(_) => default.to_string(),
        _ => return false,
    };
    let Some(sentence) = old.strip_prefix(new).and_then(|s| s.strip_prefix(' ')) else {
        return false;
    };
    new.ends_with(['.', '!', '?'])
        && DEFAULT_FORMS.iter().any(|form| {
            [shown.clone(), format!("`{shown}`")]
                .iter()
                .any(|s| sentence == format!("{form}{s}."))
        })
}

/// Whether `new` is `old` with some runs of spaces inside lines shortened
/// and nothing else: the same words, lines, indentation, line ends and code
/// spans, and no fenced code block in the text.
fn spaces_only(old: &str, new: &str) -> bool {
    let squash = |t: &str| {
        t.split(' ')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let spans = |t: &str| {
        t.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (ol, nl): (Vec<&str>, Vec<&str>) = (old.split('\n').collect(), new.split('\n').collect());
    let lead = |t: &str| t.len() - t.trim_start().len();
    let tail = |t: &str| t.len() - t.trim_end().len();
    new.len() < old.len()
        && !old.contains("```")
        && !old.contains("~~~")
        && ol.len() == nl.len()
        && ol.iter().zip(&nl).all(|(o, n)| {
            squash(o) == squash(n)
                && lead(o) == lead(n)
                && tail(o) == tail(n)
                && (!o.starts_with("    ") || o == n)
        })
        && spans(old) == spans(new)
}

/// `text` without what `Trim::EdgeWhitespace` may take: all whitespace at
/// the end; at the start, blank lines and at most three spaces of indent.
fn edge(text: &str) -> String {
    let end = text.trim_end();
    let body = end.trim_start();
    let lead = &end[..end.len() - body.len()];
    let indent = lead.rsplit('\n').next().unwrap_or("");
    if indent.len() <= 3 && indent.chars().all(|c| c == ' ') {
        body.to_string()
    } else {
        format!("{indent}{body}")
    }
}

/// What each rewrite took out of a `description` that went from `old` to
/// `new`, or `None` when no combination of them explains it.
fn explain_text(old: &str, new: &str, default: Option<&Value>) -> Option<Saved> {
    let t = &edge(old)[..];
    let mut saved = Saved::new();
    if t.len() != old.len() {
        saved.insert("EdgeWhitespace", old.len() - t.len());
    }
    if t == new {
        return Some(saved);
    }
    if restates_default(t, new, default) {
        saved.insert("DefaultRestated", t.len() - new.len());
        return Some(saved);
    }
    if spaces_only(t, new) {
        saved.insert("SpaceRun", t.len() - new.len());
        return Some(saved);
    }
    // Spaces shortened, and the restating sentence (which has no runs)
    // taken off the end.
    let cut = (0..t.len())
        .filter(|&i| t.is_char_boundary(i))
        .find(|&i| restates_default(t, &t[..i], default) && spaces_only(&t[..i], new))?;
    saved.insert("SpaceRun", cut - new.len());
    saved.insert("DefaultRestated", t.len() - cut);
    Some(saved)
}

/// Compares schema node `old` (as converted) with `new` (listed, inlined)
/// at `at`, adding what each rewrite saved; a difference no rewrite
/// explains is returned.
fn compare(old: &Value, new: &Value, at: &str, saved: &mut Saved) -> Result<(), String> {
    let (Value::Object(o), Value::Object(n)) = (old, new) else {
        return if old == new {
            Ok(())
        } else {
            Err(format!("{at}: {old} became {new}"))
        };
    };
    for (key, nv) in n {
        let Some(ov) = o.get(key) else {
            return Err(format!("{at}: `{key}` was added"));
        };
        let here = format!("{at}/{key}");
        match (key.as_str(), ov, nv) {
            ("description" | "title", Value::String(os), Value::String(ns)) if os != ns => {
                let explained = match key.as_str() {
                    "description" => explain_text(os, ns, o.get("default")),
                    _ => (edge(os) == *ns)
                        .then(|| Saved::from([("EdgeWhitespace", os.len() - ns.len())])),
                };
                let Some(explained) = explained else {
                    return Err(format!("{here}: {os:?} became {ns:?}"));
                };
                for (k, v) in explained {
                    *saved.entry(k).or_default() += v;
                }
            }
            ("properties" | "patternProperties" | "$defs" | "dependentSchemas", _, _) => {
                compare_map(ov, nv, &here, saved)?
            }
            ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(os), Value::Array(ns)) => {
                if os.len() != ns.len() {
                    return Err(format!("{here}: {} members became {}", os.len(), ns.len()));
                }
                for (i, (a, b)) in os.iter().zip(ns).enumerate() {
                    compare(a, b, &format!("{here}/{i}"), saved)?;
                }
            }
            (
                "items"
                | "additionalProperties"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames",
                _,
                _,
            ) => compare(ov, nv, &here, saved)?,
            _ if ov == nv => {}
            _ => return Err(format!("{here}: {ov} became {nv}")),
        }
    }
    for (key, ov) in o {
        if n.contains_key(key) {
            continue;
        }
        let bytes = key.len() + 3 + text_len(ov) + 1;
        if key == "readOnly" {
            *saved.entry("ReadOnlyKeyword").or_default() += bytes;
        } else if key == "additionalProperties" && ov == &Value::Bool(true) {
            // What its absence means (the schemas compared hold no
            // `unevaluatedProperties`, checked by the caller).
            *saved.entry("AdditionalPropertiesTrue").or_default() += bytes;
        } else {
            return Err(format!("{at}: `{key}` ({ov}) was dropped"));
        }
    }
    Ok(())
}

fn compare_map(old: &Value, new: &Value, at: &str, saved: &mut Saved) -> Result<(), String> {
    let (Value::Object(o), Value::Object(n)) = (old, new) else {
        return Err(format!("{at}: not a map of schemas"));
    };
    let (ok, nk): (Vec<&String>, Vec<&String>) = (o.keys().collect(), n.keys().collect());
    if ok != nk {
        return Err(format!("{at}: members {ok:?} became {nk:?}"));
    }
    for (key, ov) in o {
        compare(ov, &n[key], &format!("{at}/{key}"), saved)?;
    }
    Ok(())
}

/// Checks every tool of `spec` under `config`; returns what each rewrite
/// saved (sharing included, as `SharedDefs`).
fn check(config: &ForgeConfig, spec: &Path) -> Saved {
    let bytes = std::fs::read(spec).unwrap();
    let name = spec.file_name().unwrap().to_string_lossy().into_owned();
    let doc = load(&bytes, &name).unwrap();
    let mut unshared = config.clone();
    unshared.options.share_subschemas = false;
    let listed = build_catalogue(&doc, config).unwrap();
    let converted = build_catalogue(&doc, &unshared).unwrap();
    let converted: BTreeMap<&str, &Value> = converted
        .tools()
        .map(|t| (t.name.as_str(), &t.input_schema))
        .collect();
    let mut saved = Saved::new();
    let mut failures = Vec::new();
    let mut tools = 0;
    for tool in listed.tools() {
        tools += 1;
        let old = converted[tool.name.as_str()];
        assert!(
            !old.to_string().contains("\"unevaluatedProperties\""),
            "{}: additionalProperties: true would not be the default",
            tool.name
        );
        let inlined = inline_shared(&tool.input_schema);
        let mut trimmed = Saved::new();
        match compare(old, &inlined, "", &mut trimmed) {
            Ok(()) => {
                let shared = (text_len(old) - trimmed.values().sum::<usize>())
                    .saturating_sub(text_len(&tool.input_schema));
                *saved.entry("SharedDefs").or_default() += shared;
                for (k, v) in trimmed {
                    *saved.entry(k).or_default() += v;
                }
            }
            Err(e) => failures.push(format!("{}: {e}", tool.name)),
        }
    }
    assert!(tools > 0, "{}: no tools", spec.display());
    assert!(
        failures.is_empty(),
        "{}: differences no lossless rewrite explains:\n{}",
        spec.display(),
        failures[..failures.len().min(20)].join("\n")
    );
    eprintln!("{}: {tools} tools, bytes saved {saved:?}", spec.display());
    saved
}

fn config_of(forge: &str) -> ForgeConfig {
    let path = common::repo().join(forge);
    ForgeConfig::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
}

#[test]
fn the_samples_list_the_same_schemas_after_inlining() {
    for forge in ["forge.json", "forge.larder.json", "forge.till.json"] {
        let config = config_of(forge);
        let spec = common::repo().join(&config.spec.path);
        check(&config, &spec);
    }
}

#[test]
fn the_full_cloudflare_release_lists_the_same_schemas_after_inlining() {
    let Some(shared) = std::env::var_os("TOOLFORGE_SHARED") else {
        eprintln!("TOOLFORGE_SHARED unset: the full release is not checked");
        return;
    };
    let config = config_of("forge.json");
    let saved = check(
        &config,
        &Path::new(&shared).join("specs/cloudflare/openapi.json"),
    );
    // The release has each kind of rewrite; a rule that stopped matching
    // shows here.
    for rewrite in [
        "ReadOnlyKeyword",
        "EdgeWhitespace",
        "SpaceRun",
        "AdditionalPropertiesTrue",
        "DefaultRestated",
        "SharedDefs",
    ] {
        assert!(
            saved.get(rewrite).is_some_and(|&b| b > 0),
            "{rewrite}: {saved:?}"
        );
    }
}

/// The comparison itself refuses what no rewrite explains.
#[test]
fn any_other_difference_fails() {
    let old: Value = serde_json::json!({"type": "object", "properties": {
        "a": {"type": "string", "description": "Port. Defaults to 80.", "default": 80},
        "b": {"type": "integer", "readOnly": true, "maximum": 3}}});
    let mut saved = Saved::new();
    let mut same = old.clone();
    same["properties"]["a"]["description"] = "Port.".into();
    same["properties"]["b"]
        .as_object_mut()
        .unwrap()
        .remove("readOnly");
    compare(&old, &same, "", &mut saved).unwrap();
    assert_eq!(saved["ReadOnlyKeyword"], r#","readOnly":true"#.len());
    let edits: [fn(&mut Map<String, Value>); 6] = [
        |b| drop(b.remove("maximum")),
        |b| drop(b.insert("minimum".into(), 1.into())),
        |b| drop(b.insert("description".into(), "An integer.".into())),
        |b| drop(b.insert("type".into(), "number".into())),
        |b| drop(b.insert("readOnly".into(), false.into())),
        |b| drop(b.insert("additionalProperties".into(), false.into())),
    ];
    for edit in edits {
        let mut other = same.clone();
        edit(other["properties"]["b"].as_object_mut().unwrap());
        assert!(
            compare(&old, &other, "", &mut Saved::new()).is_err(),
            "{other}"
        );
    }
    let mut other = same.clone();
    other["properties"]["a"]["description"] = "Port. Defaults to 81.".into();
    assert!(compare(&old, &other, "", &mut Saved::new()).is_err());
    // Spaces: runs inside a line may shorten; code, indentation, line ends
    // and words may not change.
    let d = |old: &str, new: &str| explain_text(old, new, None).is_some();
    assert!(d("a  b |  c", "a b | c"));
    assert!(d("\n  a  b \n", "a b"));
    assert!(!d("    a", "a"), "an indented code block stays one");
    for (old, new) in [
        ("a  b", "ab"),
        ("`a  b`", "`a b`"),
        ("  a", " a"),
        ("a  \nb", "a \nb"),
        ("    a  b", "    a b"),
        ("```\na  b\n```", "```\na b\n```"),
        ("a b", "a  b"),
        ("a\nb", "a b"),
    ] {
        assert!(!d(old, new), "{old:?} -> {new:?}");
    }
}
