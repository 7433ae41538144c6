//! Reading a spec: JSON or YAML bytes → a checked OpenAPI 3.0-model
//! document (3.1 documents are normalised, Swagger 2.0 is refused).
//!
//! Both parsers refuse nesting deeper than 128 levels, so hostile input
//! yields a [`GenerateError::Syntax`] rather than a stack overflow. YAML
//! needs two more bounds, both found by the fuzz target `loader`:
//! - flow collections (`[`, `{`) nesting beyond 128 levels are refused
//!   before the YAML scanner runs, since its time grows with the square of
//!   that nesting (see the private `yaml_scan` module);
//! - aliases: a document may expand to at most [`yaml_node_limit`] nodes
//!   (the parser's own repetition limit counts alias jumps, not what they
//!   expand to, so one wide anchor aliased many times would otherwise grow
//!   quadratically with the input).

use serde_json::{Map, Number, Value};

use crate::error::{GenerateError, Result};
use crate::normalise;

/// A loaded OpenAPI document in the 3.0 model.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The whole document (3.1 input already normalised to 3.0).
    pub root: Value,
    /// The spec file name, used in every error.
    pub file: String,
    /// The `openapi` version as written in the file (before normalising).
    pub openapi_version: String,
}

/// Parses `bytes` (JSON when the first non-space byte is `{`, else YAML).
///
/// # Errors
/// [`GenerateError::Syntax`] for unparsable input (message with line and
/// column), [`GenerateError::Swagger2`] for Swagger 2.0, and
/// [`GenerateError::NotOpenApi`] when the root is not an object or the
/// `openapi` field is missing or not 3.0.x / 3.1.x.
pub fn load(bytes: &[u8], file: &str) -> Result<Document> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    let mut root = if first == Some(&b'{') {
        match crate::split_parse::parse(bytes) {
            Some(root) => root,
            None => serde_json::from_slice::<Value>(bytes)
                .map_err(|e| syntax(file, &format!("JSON: {e}")))?,
        }
    } else {
        parse_yaml(bytes, file)?
    };
    let Some(map) = root.as_object() else {
        return Err(not_openapi(
            file,
            "",
            &format!(
                "the document root must be an object, found {}",
                kind_name(&root)
            ),
        ));
    };
    if let Some(version) = map.get("swagger") {
        return Err(GenerateError::Swagger2 {
            file: file.to_string(),
            version: scalar_text(version),
        });
    }
    let version = match map.get("openapi") {
        None => {
            return Err(not_openapi(
                file,
                "/openapi",
                "missing `openapi` field: not an OpenAPI 3.x document",
            ));
        }
        Some(Value::String(v)) => v.clone(),
        Some(other) => {
            return Err(not_openapi(
                file,
                "/openapi",
                &format!(
                    "`openapi` must be a string such as \"3.0.3\", found {} (quote it in YAML)",
                    scalar_text(other)
                ),
            ));
        }
    };
    match minor_version(&version) {
        Some(0) => {}
        Some(1) => normalise::to_openapi_30(&mut root),
        _ => {
            return Err(not_openapi(
                file,
                "/openapi",
                &format!("unsupported OpenAPI version `{version}`: expected 3.0.x or 3.1.x"),
            ));
        }
    }
    Ok(Document {
        root,
        file: file.to_string(),
        openapi_version: version,
    })
}

/// `Some(minor)` for `3.<minor>` or `3.<minor>.<patch…>`.
fn minor_version(version: &str) -> Option<u32> {
    let rest = version.trim().strip_prefix("3.")?;
    let (minor, tail) = match rest.split_once('.') {
        Some((minor, tail)) => (minor, Some(tail)),
        None => (rest, None),
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if tail.is_some_and(|t| t.is_empty()) {
        return None;
    }
    minor.parse().ok()
}

/// Aliases may add this many nodes beyond one per input byte.
const YAML_ALIAS_SLACK: usize = 1_000_000;

/// Most nodes a YAML document of `len` bytes may expand to. Without
/// aliases a document has at most about one node per byte, so only alias
/// expansion comes near this.
pub fn yaml_node_limit(len: usize) -> usize {
    len.saturating_add(YAML_ALIAS_SLACK)
}

/// Whether the YAML `text` expands to at most `limit` nodes through its
/// aliases, building at most that many: `false` only when the budget runs
/// out (any other fault is left to the caller's own parse to report, so
/// its behaviour on everything else is unchanged).
pub(crate) fn yaml_within_nodes(text: &str, limit: usize) -> bool {
    let left = std::cell::Cell::new(limit);
    let built = serde::de::DeserializeSeed::deserialize(
        YamlBudget { left: &left, limit },
        yaml_serde::Deserializer::from_str(text),
    );
    built.is_ok() || left.get() > 0
}

/// Deepest flow nesting scanned (the deserializer refuses more than 128
/// levels of any nesting anyway).
const YAML_MAX_FLOW_DEPTH: usize = 128;

fn parse_yaml(bytes: &[u8], file: &str) -> Result<Value> {
    if let Some((line, column)) = crate::yaml_scan::flow_depth_beyond(bytes, YAML_MAX_FLOW_DEPTH) {
        return Err(syntax(
            file,
            &format!(
                "YAML: flow collections (`[`, `{{`) nest deeper than {YAML_MAX_FLOW_DEPTH} levels at line {line} column {column}"
            ),
        ));
    }
    let limit = yaml_node_limit(bytes.len());
    let left = std::cell::Cell::new(limit);
    let mut value = serde::de::DeserializeSeed::deserialize(
        YamlBudget { left: &left, limit },
        yaml_serde::Deserializer::from_slice(bytes),
    )
    .map_err(|e| syntax(file, &format!("YAML: {e}")))?;
    value
        .apply_merge()
        .map_err(|e| syntax(file, &format!("YAML merge key (`<<`): {e}")))?;
    yaml_to_json(value).map_err(|(mut path, message)| {
        path.reverse();
        let pointer: String = path
            .iter()
            .map(|t| format!("/{}", crate::error::escape_token(t)))
            .collect();
        syntax(file, &format!("YAML at {pointer}: {message}"))
    })
}

/// Converts YAML to JSON: scalar keys become strings, tags are dropped.
/// Depth is bounded by the YAML parser (128 levels), so recursion is safe.
/// On error returns the path (innermost token first) and a message.
fn yaml_to_json(value: yaml_serde::Value) -> std::result::Result<Value, (Vec<String>, String)> {
    use yaml_serde::Value as Y;
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => yaml_number(&n).ok_or_else(|| {
            (
                Vec::new(),
                format!("number `{n}` cannot be represented in JSON"),
            )
        })?,
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                out.push(yaml_to_json(item).map_err(|(mut p, m)| {
                    p.push(i.to_string());
                    (p, m)
                })?);
            }
            Value::Array(out)
        }
        Y::Mapping(mapping) => {
            let mut out = Map::with_capacity(mapping.len());
            for (k, v) in mapping {
                let key = match k {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    Y::Null => "null".to_string(),
                    _ => {
                        return Err((
                            Vec::new(),
                            "mapping keys must be scalars (strings, numbers or booleans)".into(),
                        ));
                    }
                };
                let v = yaml_to_json(v).map_err(|(mut p, m)| {
                    p.push(key.clone());
                    (p, m)
                })?;
                out.insert(key, v);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value)?,
    })
}

/// Builds a `yaml_serde::Value` as its own `Deserialize` does (same
/// nodes, tags and duplicate-key errors), counting nodes down from `left`
/// as the deserializer expands aliases: fails when none are left, before
/// an alias bomb can take the memory.
#[derive(Clone, Copy)]
struct YamlBudget<'a> {
    left: &'a std::cell::Cell<usize>,
    limit: usize,
}

impl YamlBudget<'_> {
    fn take<E: serde::de::Error>(self) -> std::result::Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => Err(E::custom(format!(
                "the document expands to more than {} nodes through aliases (`*name`); refusing it as an alias bomb",
                self.limit
            ))),
        }
    }

    fn leaf<E: serde::de::Error>(
        self,
        value: yaml_serde::Value,
    ) -> std::result::Result<yaml_serde::Value, E> {
        self.take()?;
        Ok(value)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for YamlBudget<'_> {
    type Value = yaml_serde::Value;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<yaml_serde::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for YamlBudget<'_> {
    type Value = yaml_serde::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> std::result::Result<Self::Value, E> {
        self.leaf(yaml_serde::Value::Bool(b))
    }

    fn visit_i64<E: serde::de::Error>(self, i: i64) -> std::result::Result<Self::Value, E> {
        self.leaf(yaml_serde::Value::Number(i.into()))
    }

    fn visit_u64<E: serde::de::Error>(self, u: u64) -> std::result::Result<Self::Value, E> {
        self.leaf(yaml_serde::Value::Number(u.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, f: f64) -> std::result::Result<Self::Value, E> {
        self.leaf(yaml_serde::Value::Number(f.into()))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<Self::Value, E> {
        self.leaf(yaml_serde::Value::String(s.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, s: String) -> std::result::Result<Self::Value, E> {
        self.leaf(yaml_serde::Value::String(s))
    }

    fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<Self::Value, E> {
        self.leaf(yaml_serde::Value::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> std::result::Result<Self::Value, E> {
        self.leaf(yaml_serde::Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        self.take()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(yaml_serde::Value::Sequence(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        use yaml_serde::mapping::Entry;
        self.take()?;
        let mut mapping = yaml_serde::Mapping::new();
        while let Some(key) = map.next_key_seed(self)? {
            match mapping.entry(key) {
                Entry::Occupied(entry) => {
                    return Err(serde::de::Error::custom(duplicate_key(entry.key())));
                }
                Entry::Vacant(entry) => {
                    entry.insert(map.next_value_seed(self)?);
                }
            }
        }
        Ok(yaml_serde::Value::Mapping(mapping))
    }

    fn visit_enum<A: serde::de::EnumAccess<'de>>(
        self,
        data: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        // A tagged node (`!tag value`): the tag, then the value.
        use serde::de::VariantAccess;
        self.take()?;
        let (tag, value) = data.variant::<String>()?;
        if tag.is_empty() {
            return Err(serde::de::Error::custom("empty YAML tag is not allowed"));
        }
        let value = value.newtype_variant_seed(self)?;
        Ok(yaml_serde::Value::Tagged(Box::new(
            yaml_serde::value::TaggedValue {
                tag: yaml_serde::value::Tag::new(tag),
                value,
            },
        )))
    }
}

/// yaml_serde's message for a repeated mapping key.
fn duplicate_key(key: &yaml_serde::Value) -> String {
    use yaml_serde::Value as Y;
    match key {
        Y::Null => "duplicate entry with null key".into(),
        Y::Bool(b) => format!("duplicate entry with key `{b}`"),
        Y::Number(n) => format!("duplicate entry with key {n}"),
        Y::String(s) => format!("duplicate entry with key {s:?}"),
        Y::Sequence(_) | Y::Mapping(_) | Y::Tagged(_) => "duplicate entry in YAML map".into(),
    }
}

fn yaml_number(n: &yaml_serde::Number) -> Option<Value> {
    if let Some(u) = n.as_u64() {
        Some(Value::Number(u.into()))
    } else if let Some(i) = n.as_i64() {
        Some(Value::Number(i.into()))
    } else {
        n.as_f64().and_then(Number::from_f64).map(Value::Number)
    }
}

fn syntax(file: &str, message: &str) -> GenerateError {
    GenerateError::Syntax {
        file: file.to_string(),
        message: message.to_string(),
    }
}

fn not_openapi(file: &str, pointer: &str, message: &str) -> GenerateError {
    GenerateError::NotOpenApi {
        file: file.to_string(),
        pointer: pointer.to_string(),
        message: message.to_string(),
    }
}

/// A short rendering of a scalar for messages.
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => kind_name(other).to_string(),
    }
}

/// The JSON kind of a value, for messages.
pub(crate) fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn loads_json_and_yaml() {
        let j = load(
            br#"  {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}"#,
            "a.json",
        )
        .unwrap();
        assert_eq!(j.openapi_version, "3.0.3");
        assert_eq!(j.file, "a.json");
        let y = load(
            b"\xEF\xBB\xBFopenapi: 3.0.1\ninfo: {title: t, version: '1'}\npaths:\n  /x:\n    get:\n      responses:\n        200: {description: ok}\n",
            "a.yaml",
        )
        .unwrap();
        assert_eq!(y.openapi_version, "3.0.1");
        assert_eq!(
            y.root["paths"]["/x"]["get"]["responses"]["200"]["description"],
            "ok"
        );
    }

    #[test]
    fn yaml_merge_keys_tags_and_anchors() {
        let y = load(
            b"openapi: 3.0.0\nbase: &b {type: object, description: d}\nc:\n  <<: *b\n  description: own\nt: !custom 5\nk:\n  true: 1\n  2: 2\n",
            "a.yaml",
        )
        .unwrap();
        assert_eq!(y.root["c"], json!({"description": "own", "type": "object"}));
        assert_eq!(y.root["t"], json!(5));
        assert_eq!(y.root["k"], json!({"true": 1, "2": 2}));
    }

    #[test]
    fn refuses_swagger_and_non_openapi() {
        let e = load(br#"{"swagger": "2.0", "info": {}}"#, "s.json").unwrap_err();
        assert!(matches!(&e, GenerateError::Swagger2 { version, .. } if version == "2.0"));
        assert!(e.to_string().contains("Swagger 2.0"), "{e}");
        let e = load(b"swagger: '2.0'\n", "s.yaml").unwrap_err();
        assert!(matches!(e, GenerateError::Swagger2 { .. }));
        for (input, needle) in [
            (&b"{\"info\": {}}"[..], "missing `openapi`"),
            (b"openapi: 3.0\n", "must be a string"),
            (b"openapi: '2.0'\n", "unsupported"),
            (b"openapi: '3.2.0'\n", "unsupported"),
            (b"openapi: '3.'\n", "unsupported"),
            (b"openapi: '3.0.'\n", "unsupported"),
            (b"openapi: 'x3.0.0'\n", "unsupported"),
        ] {
            let e = load(input, "x.yaml").unwrap_err();
            assert!(
                matches!(&e, GenerateError::NotOpenApi { pointer, .. } if pointer == "/openapi"),
                "{e}"
            );
            assert!(e.to_string().contains(needle), "{e}");
        }
        for input in [&b"[1, 2]"[..], b"", b"just a string", b"42"] {
            let e = load(input, "x.yaml").unwrap_err();
            assert!(
                matches!(&e, GenerateError::NotOpenApi { pointer, .. } if pointer.is_empty()),
                "{e}"
            );
        }
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let e = load(
            b"openapi: 3.0.0\npaths:\n  /x: [1, 2\n  /y: 3\n",
            "bad.yaml",
        )
        .unwrap_err();
        assert!(matches!(e, GenerateError::Syntax { .. }), "{e}");
        assert!(e.to_string().contains("line"), "{e}");
        let e = load(b"{\"openapi\": \"3.0.0\",\n \"paths\": {,}}", "bad.json").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = load(b"a: *nope\n", "bad.yaml").unwrap_err();
        assert!(matches!(e, GenerateError::Syntax { .. }), "{e}");
        let e = load(b"openapi: 3.0.0\nx:\n  ? [1, 2]\n  : 3\n", "bad.yaml").unwrap_err();
        assert!(e.to_string().contains("/x"), "{e}");
        let e = load(b"openapi: 3.0.0\nx: [.nan]\n", "bad.yaml").unwrap_err();
        assert!(e.to_string().contains("/x/0"), "{e}");
        let e = load(b"a: 1\na: 2\n", "dup.yaml").unwrap_err();
        assert!(matches!(e, GenerateError::Syntax { .. }), "{e}");
        let e = load(b"\xff\xfe\x00", "bin.yaml").unwrap_err();
        assert!(matches!(e, GenerateError::Syntax { .. }), "{e}");
    }

    #[test]
    fn yaml_alias_bombs_are_refused() {
        let mut text = String::from("openapi: 3.0.0\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let refs = vec![format!("*l{}", i - 1); 10].join(", ");
            text.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        let e = load(text.as_bytes(), "bomb.yaml").unwrap_err();
        assert!(matches!(e, GenerateError::Syntax { .. }), "{e}");
        assert!(e.to_string().contains("repetition limit"), "{e}");
    }

    #[test]
    fn yaml_alias_expansion_is_bounded() {
        // One wide anchor aliased many times: few alias jumps (the YAML
        // parser's repetition limit passes), but 2,000 × 2,000 nodes
        // from 16 KB. Found by the `loader` fuzz target.
        let mut text = String::from("openapi: 3.0.0\n");
        text.push_str(&format!("a: &a [{}]\n", vec!["x"; 2000].join(",")));
        text.push_str(&format!("b: [{}]\n", vec!["*a"; 2000].join(",")));
        let started = std::time::Instant::now();
        let e = load(text.as_bytes(), "wide.yaml").unwrap_err();
        assert!(matches!(e, GenerateError::Syntax { .. }), "{e}");
        assert!(e.to_string().contains("alias bomb"), "{e}");
        assert!(e.to_string().starts_with("wide.yaml: "), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        // Anchors used within reason load as before.
        let mut text = String::from("openapi: 3.0.0\n");
        text.push_str(&format!("a: &a [{}]\n", vec!["x"; 200].join(",")));
        text.push_str(&format!("b: [{}]\n", vec!["*a"; 200].join(",")));
        let d = load(text.as_bytes(), "fine.yaml").unwrap();
        assert_eq!(d.root["b"][199][199], "x");
        assert!(yaml_node_limit(0) < yaml_node_limit(text.len()));
    }

    #[test]
    fn deep_flow_nesting_is_refused_before_the_yaml_scanner() {
        // 100,000 levels: the YAML scanner alone would take hours (its time
        // grows with the square of the nesting). Found by the `loader`
        // fuzz target.
        let text = format!(
            "openapi: 3.0.0\na: {}1{}\n",
            "{a: ".repeat(100_000),
            "}".repeat(100_000)
        );
        let started = std::time::Instant::now();
        let e = load(text.as_bytes(), "deep.yaml").unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert!(matches!(e, GenerateError::Syntax { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("nest deeper than 128 levels at line 2 column 516"),
            "{e}"
        );
        // 128 levels and less: as before (the deserializer counts the root too).
        let text = format!("a: {}1{}\n", "[".repeat(128), "]".repeat(128));
        let e = load(text.as_bytes(), "deep.yaml").unwrap_err();
        assert!(e.to_string().contains("recursion limit exceeded"), "{e}");
        let text = format!(
            "openapi: 3.0.0\na: {}1{}\n",
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(load(text.as_bytes(), "ok.yaml").is_ok());
    }

    /// The bounded builder gives what `yaml_serde::Value`'s own
    /// `Deserialize` gives, errors included.
    #[test]
    fn bounded_yaml_values_match_yaml_serde() {
        let sample = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../specs/cloudflare-sample.yaml"),
        )
        .unwrap();
        let cases: Vec<&[u8]> = vec![
            &sample,
            b"",
            b"~",
            b"a: 1\nb: [1, -2, 3.5, .inf, .nan, 18446744073709551615, -9223372036854775808]\n",
            b"a: !custom 5\nb: !!str 7\nc: !t {x: [1]}\nd: !!binary aGk=\n",
            b"? [1, 2]\n: x\n? {a: 1}\n: y\n1: one\ntrue: t\nnull: n\n",
            b"base: &b {k: v}\nm:\n  <<: *b\n  k: own\nl: &l [1, *b]\nll: [*l, *l]\n",
            b"a: 1\na: 2\n",
            b"1: a\n1: b\n",
            b"true: a\ntrue: b\n",
            b"~: a\n~: b\n",
            b"[1]: a\n[1]: b\n",
            b"a: *nope\n",
            b"a: [1, 2\n",
            b"a: !<!> 1\n",
            b"--- 1\n--- 2\n",
            b"a: |\n  text\nb: >-\n  folded\n",
        ];
        for input in cases {
            let left = std::cell::Cell::new(usize::MAX);
            let ours = serde::de::DeserializeSeed::deserialize(
                YamlBudget {
                    left: &left,
                    limit: usize::MAX,
                },
                yaml_serde::Deserializer::from_slice(input),
            )
            .map_err(|e| e.to_string());
            let theirs =
                yaml_serde::from_slice::<yaml_serde::Value>(input).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn openapi_31_is_normalised() {
        let d = load(
            br#"{"openapi": "3.1.0", "webhooks": {}, "components": {"schemas": {"A": {"type": ["string", "null"]}}}}"#,
            "a.json",
        )
        .unwrap();
        assert_eq!(d.openapi_version, "3.1.0");
        assert_eq!(d.root["openapi"], "3.0.3");
        assert_eq!(
            d.root["components"]["schemas"]["A"],
            json!({"type": "string", "nullable": true})
        );
    }

    #[test]
    fn minor_versions() {
        assert_eq!(minor_version("3.0.3"), Some(0));
        assert_eq!(minor_version("3.1"), Some(1));
        assert_eq!(minor_version("3.1.1-rc1"), Some(1));
        assert_eq!(minor_version("3.x"), None);
        assert_eq!(minor_version("4.0.0"), None);
    }
}
