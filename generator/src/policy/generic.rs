//! The generic policy: products from tags or paths without version words, names from `operationId`, no
//! permissions, bare bodies, the generic runtime profile. These are the
//! defaults of [`ApiPolicy`]; [`Generic`] overrides nothing.

use serde_json::{Map, Value};

use super::resource_names::{is_path_mashup, resource_action_name};
use super::versions::strip_versions;
use super::{ApiPolicy, OpRef};
use crate::ir::Envelope;
use crate::naming::{Shorten, dedupe_words, fit_tool_name, fit_tool_name_by, snake};

/// The generic [`ApiPolicy`]: every default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Generic;

impl ApiPolicy for Generic {}

/// The product of an operation: its first tag without version words
/// ([`strip_versions`]; the tag's whole snake name when nothing else is
/// left), else the first literal path segment that is more than a version
/// or `api` (`/2010-04-01/Accounts.json` → `accounts`, `/api/v2/users` →
/// `users`), else `default`. Each operation's product depends on that
/// operation alone, so it never changes with the order or number of the
/// others; two tags that agree once stripped (`ApiV1Users`, `UsersApi`)
/// are one product.
pub fn product(op: &OpRef<'_>) -> String {
    let tag = op
        .op
        .get("tags")
        .and_then(Value::as_array)
        .and_then(|t| t.first())
        .and_then(Value::as_str)
        .map(snake)
        .filter(|s| !s.is_empty())
        .map(|full| {
            Some(strip_versions(&full))
                .filter(|s| !s.is_empty())
                .unwrap_or(full)
        });
    tag.or_else(|| path_product(op.path))
        .unwrap_or_else(|| "default".to_string())
}

/// File endings dropped from a path segment before it names a product.
const PATH_EXTENSIONS: &[&str] = &["json", "xml", "yaml", "yml", "csv"];

/// The first literal path segment, without a file ending, that is more
/// than a version or API word.
fn path_product(path: &str) -> Option<String> {
    path.split('/')
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .map(|s| match s.rsplit_once('.') {
            Some((stem, ext)) if PATH_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) => {
                stem
            }
            _ => s,
        })
        .map(|s| strip_versions(&snake(s)))
        .find(|s| !s.is_empty())
}

/// Path words without parameters, for names when there is no operationId.
pub fn path_words(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .map(snake)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `snake(operationId)`; the `resource_action` name
/// ([`resource_action_name`]) when the id is absent or a path mashup
/// ([`is_path_mashup`]); `method_path_words` when the path has no resource.
pub fn name_candidates(op: &OpRef<'_>, product: &str) -> Vec<String> {
    let key = op.key();
    let id = op
        .operation_id()
        .filter(|id| !is_path_mashup(id, op.method, op.path))
        .map(snake)
        .filter(|s| !s.is_empty());
    let method_path = || {
        let mut w = vec![op.method.key().to_string()];
        w.extend(path_words(op.path));
        if op.path.trim_end_matches('/').ends_with('}') {
            w.push("by_id".into());
        }
        w.join("_")
    };
    // The name the rule before `resource_action` gave, tried last: it
    // tells apart operations whose resource names collide (paths that
    // differ only in a parameter) before a hash has to.
    let mut before_rule = None;
    let base = match id {
        Some(name) => name,
        None => match resource_action_name(op.method, op.path) {
            Some(name) => {
                before_rule = Some(
                    op.operation_id()
                        .map(snake)
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(method_path),
                );
                name
            }
            None => method_path(),
        },
    };
    let first = fit_tool_name(&base, &key);
    let mut out = vec![first];
    if !base.starts_with(product) {
        out.push(fit_tool_name(&format!("{product}_{base}"), &key));
    }
    out.push(fit_tool_name(&format!("{base}_{}", op.method.key()), &key));
    // Tried only when every choice above is taken: readable names for long
    // dotted operationIds that collide once shortened (Microsoft Graph).
    let before_rule = before_rule.map(|name| fit_tool_name(&name, &key));
    for candidate in fallback_candidates(op, &key).into_iter().chain(before_rule) {
        if !out.contains(&candidate) {
            out.push(candidate);
        }
    }
    out
}

/// `word` without a plural ending (`calendars` → `calendar`, `policies` →
/// `policy`), lower case.
fn singular(word: &str) -> String {
    let w = word.to_ascii_lowercase();
    if let Some(stem) = w.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = w.strip_suffix('s') {
        stem.to_string()
    } else {
        w
    }
}

/// A dotted operationId without the item segments that repeat their
/// collection (`users.user.calendars.calendar.events` → `users.calendars.events`).
fn without_item_segments(operation_id: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in operation_id.split('.') {
        if out
            .last()
            .is_some_and(|prev| singular(prev) == seg.to_ascii_lowercase())
        {
            continue;
        }
        out.push(seg);
    }
    out.join(".")
}

/// Literal path words, a namespaced segment (`microsoft.graph.forward`)
/// reduced to its last part, repeats dropped, then the method.
fn path_name(op: &OpRef<'_>) -> String {
    let reduced: Vec<&str> = op
        .path
        .split('/')
        .map(|s| match s.matches('.').count() {
            0 | 1 => s,
            _ => s.rsplit('.').next().unwrap_or(s),
        })
        .collect();
    let words = path_words(&reduced.join("/"));
    dedupe_words(&format!("{}_{}", words.join("_"), op.method.key()))
}

/// Further name candidates: the operationId without item segments and
/// repeated words, shortened three ways; the path's words; the first and
/// the last three segments of the operationId.
fn fallback_candidates(op: &OpRef<'_>, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(id) = op.operation_id() {
        let lean = without_item_segments(id);
        let short = dedupe_words(&snake(&lean));
        if !short.is_empty() {
            for how in [Shorten::Left, Shorten::Right, Shorten::Middle] {
                out.push(fit_tool_name_by(&short, key, how));
            }
        }
        let segments: Vec<&str> = lean.split('.').collect();
        if segments.len() > 4 {
            let ends = [&segments[..1], &segments[segments.len() - 3..]].concat();
            let ends = dedupe_words(&snake(&ends.join(".")));
            out.push(fit_tool_name_by(&ends, key, Shorten::Left));
            out.push(fit_tool_name_by(&ends, key, Shorten::Right));
        }
    }
    let by_path = path_name(op);
    if !by_path.is_empty() {
        out.push(fit_tool_name_by(&by_path, key, Shorten::Left));
        out.push(fit_tool_name_by(&by_path, key, Shorten::Right));
    }
    out
}

/// The success body is the output when it is an object; other shapes are
/// wrapped as `{result}` by the runtime. The wrapped schema's `$defs` move
/// to the new root, where its `#/$defs/…` references point (left inside
/// `result`, a list of a recursive type had references that named nothing).
pub fn output(success: Option<Value>) -> (Envelope, Option<Value>) {
    match success {
        Some(schema) if is_object_schema(&schema) => (Envelope::None, Some(schema)),
        Some(mut schema) => {
            let defs = match &mut schema {
                Value::Object(map) => map.shift_remove("$defs"),
                _ => None,
            };
            // By hand: `json!` would re-serialise `schema` (a deep copy).
            let mut root = Map::from_iter([
                ("type".to_string(), Value::String("object".into())),
                (
                    "properties".to_string(),
                    Value::Object(Map::from_iter([("result".to_string(), schema)])),
                ),
            ]);
            if let Some(defs) = defs {
                root.insert("$defs".to_string(), defs);
            }
            (Envelope::Wrapped, Some(Value::Object(root)))
        }
        None => (Envelope::None, None),
    }
}

/// A schema whose instances are always JSON objects.
pub fn is_object_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
        None => {
            schema.get("properties").is_some()
                || schema
                    .get("allOf")
                    .and_then(Value::as_array)
                    .is_some_and(|all| all.iter().any(is_object_schema))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ir::HttpMethod;
    use crate::naming::{NameRequest, assign_unique, short_hash};

    fn product_of(path: &str, op: Value) -> String {
        let item = json!({});
        product(&OpRef {
            path,
            method: HttpMethod::Get,
            op: &op,
            path_item: &item,
        })
    }

    #[test]
    fn products_from_tags_lose_version_words() {
        let p = "/2010-04-01/Accounts/{AccountSid}/Calls.json";
        assert_eq!(product_of(p, json!({"tags": ["Api20100401Call"]})), "call");
        assert_eq!(
            product_of(p, json!({"tags": ["Api20100401Account", "x"]})),
            "account"
        );
        assert_eq!(
            product_of("/x", json!({"tags": ["Users API v2beta1"]})),
            "users"
        );
        assert_eq!(product_of("/x", json!({"tags": ["API Keys"]})), "api_keys");
        // Nothing left once stripped: the whole tag.
        assert_eq!(product_of("/users", json!({"tags": ["API v2"]})), "api_v2");
        assert_eq!(product_of("/users", json!({"tags": ["v1"]})), "v1");
        // A tag with no ASCII word counts as no tag.
        assert_eq!(product_of("/users", json!({"tags": ["日本"]})), "users");
    }

    #[test]
    fn products_from_paths_skip_versions_and_api() {
        let none = json!({});
        assert_eq!(product_of("/v1/users/{id}", none.clone()), "users");
        assert_eq!(
            product_of("/2010-04-01/Accounts/{Sid}/Calls.json", none.clone()),
            "accounts"
        );
        assert_eq!(
            product_of("/2010-04-01/Accounts.json", none.clone()),
            "accounts"
        );
        assert_eq!(product_of("/api/v2/teams", none.clone()), "teams");
        assert_eq!(product_of("/rest/api/2/issue/{key}", none.clone()), "issue");
        assert_eq!(product_of("/apiv1.0/things", none.clone()), "things");
        assert_eq!(product_of("/api/users_api/x", none.clone()), "users");
        assert_eq!(
            product_of("/microsoft.graph.me", none.clone()),
            "microsoft_graph_me"
        );
    }

    #[test]
    fn products_default_when_nothing_names_one() {
        let none = json!({});
        for path in [
            "/",
            "",
            "/{id}",
            "/v1/{id}",
            "/api/v2/{id}.json",
            "/2010-04-01",
        ] {
            assert_eq!(product_of(path, none.clone()), "default", "{path}");
        }
        assert_eq!(product_of("/v1", json!({"tags": []})), "default");
        assert_eq!(product_of("/v1", json!({"tags": [5]})), "default");
    }

    #[test]
    fn products_are_lower_snake_and_collide_by_merging() {
        // Tags that agree once stripped name one product, whatever the order.
        let a = product_of("/a", json!({"tags": ["ApiV1Users"]}));
        let b = product_of("/b", json!({"tags": ["UsersApi"]}));
        let c = product_of("/v3/users", json!({}));
        assert_eq!(
            (a.as_str(), b.as_str(), c.as_str()),
            ("users", "users", "users")
        );
        for tag in [
            "Api20100401AvailablePhoneNumberCountry",
            "v2 — Ünïcode",
            "2FA",
            "type",
        ] {
            let p = product_of("/x", json!({"tags": [tag]}));
            assert!(!p.is_empty(), "{tag}");
            assert!(
                p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{p}"
            );
        }
    }

    #[test]
    fn long_dotted_operation_ids_get_readable_names_not_hashes() {
        // Two Microsoft Graph operations whose names collide once cut to 64
        // characters by dropping the second word.
        let ops = [
            (
                "/users/{user-id}/calendarView/{event-id}/instances/{event-id1}/exceptionOccurrences/{event-id2}/microsoft.graph.dismissReminder",
                "users.user.calendarView.event.instances.event.exceptionOccurrences.event.dismissReminder",
            ),
            (
                "/users/{user-id}/calendars/{calendar-id}/calendarView/{event-id}/instances/{event-id1}/exceptionOccurrences/{event-id2}/microsoft.graph.dismissReminder",
                "users.user.calendars.calendar.calendarView.event.instances.event.exceptionOccurrences.event.dismissReminder",
            ),
        ];
        let item = json!({});
        let bodies: Vec<Value> = ops
            .iter()
            .map(|(_, id)| json!({"operationId": id}))
            .collect();
        let requests: Vec<NameRequest> = ops
            .iter()
            .zip(&bodies)
            .map(|((path, _), body)| {
                let op = OpRef {
                    path,
                    method: HttpMethod::Post,
                    op: body,
                    path_item: &item,
                };
                NameRequest {
                    key: op.key(),
                    candidates: name_candidates(&op, &product(&op)),
                }
            })
            .collect();
        // Both first choices are the same cut name.
        assert_eq!(requests[0].candidates[0], requests[1].candidates[0]);
        let names = assign_unique(&requests, &Default::default());
        assert_ne!(names[0], names[1]);
        for (name, request) in names.iter().zip(&requests) {
            assert!(name.len() <= 64, "{name}");
            assert!(!name.ends_with(&short_hash(&request.key)), "{name}");
            assert!(name.contains("dismiss_reminder"), "{name}");
        }
    }

    #[test]
    fn resource_names_that_collide_fall_back_to_the_old_names_not_hashes() {
        // Two paths that differ only in a parameter name and its position
        // give one resource name; the method-and-path name tells them apart.
        let item = json!({});
        let none = json!({});
        let paths = ["/pets/{id}/owner", "/pets/owner/{id}"];
        let requests: Vec<NameRequest> = paths
            .iter()
            .map(|path| {
                let op = OpRef {
                    path,
                    method: HttpMethod::Get,
                    op: &none,
                    path_item: &item,
                };
                NameRequest {
                    key: op.key(),
                    candidates: name_candidates(&op, &product(&op)),
                }
            })
            .collect();
        assert_eq!(requests[0].candidates[0], "pets_owner_get");
        assert_eq!(requests[1].candidates[0], "pets_owner_get");
        assert_eq!(
            requests[0].candidates.last().map(String::as_str),
            Some("get_pets_owner")
        );
        assert_eq!(
            requests[1].candidates.last().map(String::as_str),
            Some("get_pets_owner_by_id")
        );
        // A third operation takes the `_get` variant first: only the old
        // name is left for the second, where it used to get a hash.
        let mut requests = requests;
        let none = json!({});
        let op = OpRef {
            path: "/pets/owner",
            method: HttpMethod::Get,
            op: &none,
            path_item: &item,
        };
        requests.push(NameRequest {
            key: op.key(),
            candidates: vec!["pets_owner_get_get".into()],
        });
        let names = assign_unique(&requests, &Default::default());
        assert_eq!(
            names,
            [
                "get_pets_owner",
                "get_pets_owner_by_id",
                "pets_owner_get_get"
            ]
        );
    }

    #[test]
    fn unwraps_exactly_when_output_gives_an_envelope() {
        let schemas = [
            json!({"type": "object"}),
            json!({"properties": {"a": {}}}),
            json!({"allOf": [{"type": "object"}, {"description": "x"}]}),
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"anyOf": [{"type": "object"}, {"type": "null"}]}),
            json!({"type": ["object", "null"]}),
            json!({}),
        ];
        for schema in schemas {
            let (env, out) = output(Some(schema.clone()));
            assert_eq!(Generic.unwraps(&schema), env != Envelope::None, "{schema}");
            if env == Envelope::None {
                assert_eq!(out.as_ref(), Some(&schema), "taken as it is");
            }
        }
    }

    #[test]
    fn a_wrapped_schema_keeps_its_defs_at_the_root() {
        // A list of a recursive type: its `#/$defs/…` references must still
        // name the definitions once the list sits under `result`.
        let list = json!({
            "type": "array",
            "items": {"$ref": "#/$defs/Node"},
            "$defs": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
        });
        let (env, out) = output(Some(list.clone()));
        assert_eq!(env, Envelope::Wrapped);
        let out = out.unwrap();
        assert_eq!(out["$defs"], list["$defs"]);
        assert_eq!(out["properties"]["result"]["items"], list["items"]);
        assert!(out["properties"]["result"].get("$defs").is_none());
        let validator = jsonschema::draft202012::new(&out).unwrap();
        assert!(validator.is_valid(&json!({"result": [{"children": [{"children": []}]}]})));
        assert!(!validator.is_valid(&json!({"result": [{"children": [1]}]})));
    }
}
