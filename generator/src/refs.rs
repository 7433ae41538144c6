//! Local `$ref` resolution inside one document (RFC 6901 JSON pointers in
//! the URI fragment) and the structural walk shared by normalisation, cycle
//! detection and the resolved Code Mode document.
//!
//! Remote references (another file, a URL) are never fetched: they are
//! reported as [`GenerateError::RemoteRef`].

use serde_json::Value;

use crate::error::{GenerateError, Result, append_token};
use crate::load::Document;
pub(crate) use crate::walk::{Ctx, child_ctx, schema_child_ctx};

/// Longest `$ref` → `$ref` chain [`deref()`] follows before giving up.
pub const MAX_REF_CHAIN: usize = 32;

/// Resolves a local reference (`#/components/schemas/Pet`) to its target.
///
/// `at` is the pointer of the node holding the `$ref`; it is used in errors.
/// Returns the target and its canonical pointer (tokens re-escaped, percent
/// encoding removed), so two spellings of one target give the same pointer.
///
/// # Errors
/// [`GenerateError::RemoteRef`] for a reference to another document,
/// [`GenerateError::DanglingRef`] when nothing is at the pointer, and
/// [`GenerateError::Invalid`] for a malformed fragment.
pub fn resolve_ref<'a>(
    doc: &'a Document,
    reference: &str,
    at: &str,
) -> Result<(&'a Value, String)> {
    match resolve_plain(doc, reference) {
        Some(found) => Ok(found),
        None => resolve_parsed(doc, reference, at),
    }
}

/// [`resolve_ref`] for any reference: its tokens parsed and unescaped, the
/// pointer rebuilt from them.
fn resolve_parsed<'a>(doc: &'a Document, reference: &str, at: &str) -> Result<(&'a Value, String)> {
    let tokens = parse_local_ref(&doc.file, reference, at)?;
    let mut node = &doc.root;
    let mut pointer = String::with_capacity(reference.len());
    for token in &tokens {
        let next = match node {
            Value::Object(map) => map.get(token.as_str()),
            Value::Array(items) => array_index(token).and_then(|i| items.get(i)),
            _ => None,
        };
        match next {
            Some(found) => {
                node = found;
                append_token(&mut pointer, token);
            }
            None => {
                return Err(GenerateError::DanglingRef {
                    file: doc.file.clone(),
                    pointer: at.to_string(),
                    reference: reference.to_string(),
                });
            }
        }
    }
    Ok((node, pointer))
}

/// The target of a plain local reference (`#/a/b`, no `~` or `%`, so each
/// token is itself and the pointer is the fragment), without the token
/// and pointer allocations of the general path; `None` for any other
/// reference or a miss, which the general path then resolves or reports.
/// Almost every reference of a real spec is plain, and each is resolved
/// once per conversion that meets it.
fn resolve_plain<'a>(doc: &'a Document, reference: &str) -> Option<(&'a Value, String)> {
    let pointer = reference.strip_prefix('#')?;
    if !pointer.starts_with('/') || memchr::memchr2(b'~', b'%', pointer.as_bytes()).is_some() {
        return None;
    }
    let mut node = &doc.root;
    for token in tokens(&pointer[1..]) {
        node = match node {
            Value::Object(map) => crate::small_map::get(map, token)?,
            Value::Array(items) => items.get(array_index(token)?)?,
            _ => return None,
        };
    }
    Some((node, pointer.to_string()))
}

/// `path.split('/')`, found byte by byte: a reference's tokens are short,
/// and the general searcher costs more than the loop there.
fn tokens(path: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(path);
    std::iter::from_fn(move || {
        let s = rest?;
        match s.bytes().position(|b| b == b'/') {
            Some(i) => {
                rest = Some(&s[i + 1..]);
                Some(&s[..i])
            }
            None => {
                rest = None;
                Some(s)
            }
        }
    })
}

/// Follows a chain of `$ref`s starting at `node` (found at pointer `at`),
/// as used for parameters, request bodies, responses and headers.
///
/// Returns `node` itself (with `at`) when it is not a reference. Sibling
/// keys of a `$ref` are ignored, as in OpenAPI 3.0.
///
/// # Errors
/// Everything [`resolve_ref`] reports, [`GenerateError::Invalid`] for a
/// non-string `$ref` or a loop of references, and
/// [`GenerateError::TooDeep`] for a chain longer than [`MAX_REF_CHAIN`].
pub fn deref<'a>(doc: &'a Document, node: &'a Value, at: &str) -> Result<(&'a Value, String)> {
    let mut current = node;
    let mut pointer = at.to_string();
    let mut seen: Vec<String> = vec![pointer.clone()];
    for _ in 0..=MAX_REF_CHAIN {
        let Some(reference) = ref_of(current) else {
            return Ok((current, pointer));
        };
        let Some(reference) = reference.as_str() else {
            return Err(invalid(&doc.file, &pointer, "`$ref` must be a string"));
        };
        let (target, target_pointer) = resolve_ref(doc, reference, &pointer)?;
        if seen.contains(&target_pointer) {
            seen.push(target_pointer);
            return Err(invalid(
                &doc.file,
                at,
                &format!("$ref loop: {}", seen.join(" -> ")),
            ));
        }
        seen.push(target_pointer.clone());
        current = target;
        pointer = target_pointer;
    }
    Err(GenerateError::TooDeep {
        file: doc.file.clone(),
        pointer: at.to_string(),
        limit: MAX_REF_CHAIN,
    })
}

/// The `$ref` member of an object, if any.
pub(crate) fn ref_of(node: &Value) -> Option<&Value> {
    crate::small_map::member(node, "$ref")
}

/// Builds a [`GenerateError::Invalid`].
pub(crate) fn invalid(file: &str, pointer: &str, message: &str) -> GenerateError {
    GenerateError::Invalid {
        file: file.to_string(),
        pointer: pointer.to_string(),
        message: message.to_string(),
    }
}

/// Splits a local reference into unescaped pointer tokens.
fn parse_local_ref(file: &str, reference: &str, at: &str) -> Result<Vec<String>> {
    let remote = || GenerateError::RemoteRef {
        file: file.to_string(),
        pointer: at.to_string(),
        reference: reference.to_string(),
    };
    if reference.is_empty() {
        return Err(invalid(file, at, "empty `$ref`"));
    }
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(remote());
    };
    let decoded = percent_decode(fragment).ok_or_else(|| {
        invalid(
            file,
            at,
            &format!("$ref `{reference}`: invalid percent-encoding in the fragment"),
        )
    })?;
    if decoded.is_empty() {
        return Ok(Vec::new());
    }
    let Some(path) = decoded.strip_prefix('/') else {
        return Err(invalid(
            file,
            at,
            &format!(
                "$ref `{reference}`: only JSON pointer fragments (`#/...`) are supported, not anchors"
            ),
        ));
    };
    path.split('/')
        .map(|token| {
            unescape_token(token).ok_or_else(|| {
                invalid(
                    file,
                    at,
                    &format!("$ref `{reference}`: `~` must be followed by 0 or 1 (RFC 6901)"),
                )
            })
        })
        .collect()
}

/// RFC 6901 unescaping (`~1` → `/`, then `~0` → `~`); `None` on a bad `~`.
fn unescape_token(token: &str) -> Option<String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// Decodes `%XX` escapes; `None` for a bad escape or non-UTF-8 result.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = hex_val(*bytes.get(i + 1)?)?;
            let lo = hex_val(*bytes.get(i + 2)?)?;
            out.push(hi * 16 + lo);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// An RFC 6901 array index: digits, no leading zero (except `0` itself).
fn array_index(token: &str) -> Option<usize> {
    if token.is_empty()
        || !token.bytes().all(|b| b.is_ascii_digit())
        || (token.len() > 1 && token.starts_with('0'))
    {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(root: Value) -> Document {
        Document {
            root,
            file: "spec.json".into(),
            openapi_version: "3.0.3".into(),
        }
    }

    #[test]
    fn tokens_are_what_split_gives() {
        for path in [
            "",
            "a",
            "a/b",
            "/a",
            "a/",
            "//",
            "components/schemas/x y",
            "é/ü//ß",
        ] {
            assert_eq!(
                tokens(path).collect::<Vec<_>>(),
                path.split('/').collect::<Vec<_>>(),
                "{path}"
            );
        }
    }

    #[test]
    fn resolves_escaped_and_percent_encoded_pointers() {
        let d = doc(
            json!({"components": {"schemas": {"a/b": {"type": "string"}, "c~d": {"type": "integer"}, "x y": [1, {"k": true}]}}}),
        );
        let (v, p) = resolve_ref(&d, "#/components/schemas/a~1b", "/here").unwrap();
        assert_eq!(v, &json!({"type": "string"}));
        assert_eq!(p, "/components/schemas/a~1b");
        let (v, _) = resolve_ref(&d, "#/components/schemas/c~0d", "/here").unwrap();
        assert_eq!(v, &json!({"type": "integer"}));
        let (v, p) = resolve_ref(&d, "#/components/schemas/x%20y/1/k", "/here").unwrap();
        assert_eq!(v, &json!(true));
        assert_eq!(p, "/components/schemas/x y/1/k");
        let (v, p) = resolve_ref(&d, "#", "/here").unwrap();
        assert!(v.is_object());
        assert_eq!(p, "");
    }

    fn resolve_general<'a>(d: &'a Document, reference: &str) -> Option<(&'a Value, String)> {
        resolve_parsed(d, reference, "/p").ok()
    }

    #[test]
    fn plain_references_resolve_as_the_general_path_does() {
        let many: serde_json::Map<String, Value> =
            (0..20).map(|i| (format!("S{i}"), json!(i))).collect();
        let d = doc(json!({
            "components": {"schemas": {"A": {"items": [1, {"k": true}]}, "": {"e": 1}, "a/b": 2}},
            "big": many, "": {"": 3}, "n": null,
        }));
        let cases = [
            "#/components/schemas/A",
            "#/components/schemas/A/items/1/k",
            "#/components/schemas/A/items/0",
            "#/components/schemas/A/items/01",
            "#/components/schemas/A/items/-",
            "#/components/schemas/A/items/2",
            "#/components/schemas/",
            "#/components/schemas//e",
            "#/big/S17",
            "#/big/S20",
            "#/",
            "#//",
            "#/n/x",
            "#/components/schemas/a~1b",
            "#/components/schemas/a%2Fb",
            "#",
            "#components",
            "other.json#/a",
        ];
        for reference in cases {
            let plain = resolve_plain(&d, reference);
            if let Some(found) = &plain {
                assert_eq!(
                    Some(found),
                    resolve_general(&d, reference).as_ref(),
                    "{reference}"
                );
            }
            // A miss or an escaped reference goes the general way: the
            // result (or error) is the same as without the fast path.
            let general = resolve_general(&d, reference);
            let full = resolve_ref(&d, reference, "/p").ok();
            assert_eq!(full, general, "{reference}");
        }
        assert!(resolve_plain(&d, "#/big/S17").is_some());
        assert!(resolve_plain(&d, "#/components/schemas/a~1b").is_none());
    }

    #[test]
    fn dangling_and_remote_refs_are_typed() {
        let d = doc(json!({"components": {"schemas": {"A": {"items": [1]}}}}));
        for r in [
            "#/components/schemas/B",
            "#/components/schemas/A/items/01",
            "#/components/schemas/A/items/1",
            "#/components/schemas/A/items/-",
        ] {
            let e = resolve_ref(&d, r, "/paths/x").unwrap_err();
            assert!(
                matches!(&e, GenerateError::DanglingRef { pointer, reference, .. } if pointer == "/paths/x" && reference == r),
                "{e}"
            );
        }
        for r in [
            "other.yaml#/x",
            "https://example.com/s.json#/a",
            "other.yaml",
        ] {
            let e = resolve_ref(&d, r, "/p").unwrap_err();
            assert!(matches!(e, GenerateError::RemoteRef { .. }), "{e}");
            assert!(e.to_string().contains(r));
        }
        for r in ["", "#anchor", "#/a~2", "#/%zz", "#/%ff"] {
            let e = resolve_ref(&d, r, "/p").unwrap_err();
            assert!(matches!(e, GenerateError::Invalid { .. }), "{r}: {e}");
        }
    }

    #[test]
    fn deref_follows_chains_and_detects_loops() {
        let d = doc(json!({"components": {"parameters": {
            "A": {"$ref": "#/components/parameters/B"},
            "B": {"$ref": "#/components/parameters/C"},
            "C": {"name": "c", "in": "query"},
            "L1": {"$ref": "#/components/parameters/L2"},
            "L2": {"$ref": "#/components/parameters/L1"},
            "Self": {"$ref": "#/components/parameters/Self"},
            "Bad": {"$ref": 3}
        }}}));
        let node = json!({"$ref": "#/components/parameters/A"});
        let (v, p) = deref(&d, &node, "/paths/~1x/get/parameters/0").unwrap();
        assert_eq!(v["name"], "c");
        assert_eq!(p, "/components/parameters/C");
        let plain = json!({"name": "p"});
        let (v, p) = deref(&d, &plain, "/here").unwrap();
        assert_eq!(v, &plain);
        assert_eq!(p, "/here");
        for name in ["L1", "Self"] {
            let node = json!({"$ref": format!("#/components/parameters/{name}")});
            let e = deref(&d, &node, "/x").unwrap_err();
            assert!(e.to_string().contains("$ref loop"), "{e}");
        }
        let node = json!({"$ref": "#/components/parameters/Bad"});
        assert!(matches!(
            deref(&d, &node, "/x"),
            Err(GenerateError::Invalid { .. })
        ));
    }

    #[test]
    fn deref_bounds_long_chains() {
        let mut params = serde_json::Map::new();
        for i in 0..10_000 {
            params.insert(
                format!("P{i}"),
                json!({"$ref": format!("#/components/parameters/P{}", i + 1)}),
            );
        }
        params.insert("P10000".into(), json!({"name": "end"}));
        let d = doc(json!({"components": {"parameters": params}}));
        let node = json!({"$ref": "#/components/parameters/P0"});
        let e = deref(&d, &node, "/x").unwrap_err();
        assert!(
            matches!(
                e,
                GenerateError::TooDeep {
                    limit: MAX_REF_CHAIN,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn contexts_separate_schemas_from_data() {
        assert_eq!(child_ctx(Ctx::Root, Some("components")), Ctx::Components);
        assert_eq!(child_ctx(Ctx::Components, Some("schemas")), Ctx::SchemaMap);
        assert_eq!(child_ctx(Ctx::SchemaMap, Some("$ref")), Ctx::Schema);
        assert_eq!(child_ctx(Ctx::Schema, Some("example")), Ctx::Data);
        assert_eq!(child_ctx(Ctx::Schema, Some("items")), Ctx::Schema);
        assert_eq!(child_ctx(Ctx::Node, Some("schema")), Ctx::Schema);
        assert_eq!(child_ctx(Ctx::Node, Some("x-foo")), Ctx::Data);
        assert_eq!(child_ctx(Ctx::SchemaList, None), Ctx::Schema);
        assert_eq!(child_ctx(Ctx::Examples, Some("one")), Ctx::ExampleObj);
        assert!(!Ctx::SchemaMap.holds_refs());
        assert!(Ctx::Schema.holds_refs());
    }
}
