//! The `spec` global of `search`: a pre-indexed spec materialised lazily.
//!
//! Parsing a full flagship spec (24 MB of JSON) with `JSON.parse` in
//! QuickJS takes ~0.8 s, far too slow for a fresh runtime per call. Instead
//! each worker parses the spec once into a [`SpecIndex`]: every JSON subtree
//! larger than [`INLINE_BYTES`] becomes an indexed node, smaller subtrees stay
//! plain values. A call's `spec` starts as the root node only; properties
//! holding large subtrees are accessors that, on first read, build that node
//! one level deep (Rust → QuickJS values, no parsing) and replace themselves
//! with a plain data property. Code pays for what it touches: a lookup such as
//! `spec.paths["/zones"].get` builds a handful of objects, a scan of every
//! operation's `summary` and `tags` a few thousand.
//!
//! To the code the result is ordinary mutable JSON data: `Object.keys`,
//! `Object.entries`, spread, `JSON.stringify` and `in` behave as on parsed JSON
//! (reading an accessor materialises it). Only
//! `Object.getOwnPropertyDescriptor` on a not-yet-read property shows the
//! accessor.
//!
//! The generator writes each shared `components` entry once and every other
//! occurrence as a marker `{"x-toolforge-inline": "#/components/…"}` (root
//! key `x-toolforge-inline-refs`; see [`inline_refs`]). The index points
//! each marker at that entry's node, so the code reads the fully inlined
//! document: each occurrence materialises as its own objects, as if parsed.

use std::sync::Arc;

use rquickjs::object::Property;
use rquickjs::{Array, Ctx, Function, Object, Value as JsValue};
use serde_json::{Map, Value};

#[path = "inline_refs.rs"]
pub mod inline_refs;

/// Subtrees whose compact JSON is at most this many bytes are built eagerly
/// together with their parent; larger ones are materialised on first access.
pub const INLINE_BYTES: usize = 256;

/// JS helper that installs a lazy accessor: `lazy(object, key, nodeId)`.
/// `load(nodeId, lazy)` is the Rust materialiser. Nothing here is reachable
/// from the sandboxed code except through the accessors themselves.
/// (Batching a node's accessors into one call, or defining inline values
/// with `set` instead of `defineProperty`, measured slower.)
const LAZY_JS: &str = r#"(function (load) {
  "use strict";
  const define = Reflect.defineProperty;
  const lazy = (object, key, id) => {
    define(object, key, {
      get() {
        const value = load(id, lazy);
        if (this !== null && typeof this === "object") {
          define(this, key, { value, writable: true, enumerable: true, configurable: true });
        }
        return value;
      },
      set(value) {
        if (this !== null && typeof this === "object") {
          define(this, key, { value, writable: true, enumerable: true, configurable: true });
        }
      },
      enumerable: true,
      configurable: true,
    });
  };
  return lazy;
})"#;

/// A JSON document split into lazily materialisable nodes.
#[derive(Debug)]
pub struct SpecIndex {
    nodes: Vec<Node>,
    root: Child,
    source_bytes: usize,
}

#[derive(Debug)]
struct Node {
    /// Object keys in document order; empty for arrays.
    keys: Vec<String>,
    children: Vec<Child>,
    array: bool,
}

#[derive(Debug, Clone)]
enum Child {
    Inline(Value),
    Lazy(u32),
    /// An inline marker's target pointer; only while the index is built.
    Marker(String),
}

impl SpecIndex {
    /// Parse `json` and index it.
    pub fn from_json(json: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| format!("spec is not valid JSON: {e}"))?;
        let mut index = Self::from_value(value)?;
        index.source_bytes = json.len();
        Ok(index)
    }

    /// Index an already parsed document (consumes it; no copy is made),
    /// reading its inline markers as their targets when the root says it
    /// has them.
    ///
    /// # Errors
    /// A marker whose target is missing, or a chain of markers too long.
    pub fn from_value(mut value: Value) -> Result<Self, String> {
        let markers = match &mut value {
            Value::Object(root) => root.shift_remove(inline_refs::INLINE_REFS_KEY).is_some(),
            _ => false,
        };
        let mut nodes = Vec::new();
        let (root, _) = build(value, &mut nodes, markers);
        if markers {
            inline_refs::resolve(&mut nodes, &root)?;
        }
        Ok(Self {
            nodes,
            root,
            source_bytes: 0,
        })
    }

    /// Number of lazily materialised nodes.
    pub fn lazy_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Size of the JSON text the index was built from (0 if built from a value).
    pub fn source_bytes(&self) -> usize {
        self.source_bytes
    }

    /// The whole document as JSON, markers read as their targets: what code
    /// that reads all of `spec` sees (for checks and tests; `search` builds
    /// only what it touches). Its size is the fully inlined document's, so
    /// only for documents the generator wrote (a hand-made marker DAG can
    /// read as exponentially many values).
    pub fn to_value(&self) -> Value {
        self.child_value(&self.root)
    }

    fn child_value(&self, child: &Child) -> Value {
        match child {
            Child::Inline(v) => v.clone(),
            Child::Marker(_) => Value::Null,
            Child::Lazy(id) => {
                let Some(node) = usize::try_from(*id).ok().and_then(|i| self.nodes.get(i)) else {
                    return Value::Null;
                };
                if node.array {
                    Value::Array(node.children.iter().map(|c| self.child_value(c)).collect())
                } else {
                    Value::Object(
                        node.keys
                            .iter()
                            .zip(&node.children)
                            .map(|(k, c)| (k.clone(), self.child_value(c)))
                            .collect(),
                    )
                }
            }
        }
    }

    /// Build the root as a QuickJS value in `ctx`.
    pub(crate) fn root_js<'js>(self: &Arc<Self>, ctx: &Ctx<'js>) -> rquickjs::Result<JsValue<'js>> {
        match &self.root {
            Child::Inline(v) => json_to_js(ctx, v),
            Child::Marker(_) => Err(unresolved(ctx)),
            Child::Lazy(id) => {
                let index = Arc::clone(self);
                let load = Function::new(ctx.clone(), move |id: u32, lazy: Function<'js>| {
                    index.materialize(&lazy, id)
                })?;
                let lazy: Function = ctx.eval(LAZY_JS)?;
                let lazy: Function = lazy.call((load,))?;
                self.materialize(&lazy, *id)
            }
        }
    }

    /// Build node `id` one level deep: small children as values, large ones
    /// as lazy accessors.
    fn materialize<'js>(&self, lazy: &Function<'js>, id: u32) -> rquickjs::Result<JsValue<'js>> {
        let ctx = lazy.ctx().clone();
        let Some(node) = usize::try_from(id).ok().and_then(|i| self.nodes.get(i)) else {
            return Err(rquickjs::Exception::throw_internal(
                &ctx,
                "unknown spec node",
            ));
        };
        if node.array {
            let array = Array::new(ctx.clone())?;
            for (i, child) in node.children.iter().enumerate() {
                match child {
                    Child::Inline(v) => array.set(i, json_to_js(&ctx, v)?)?,
                    Child::Lazy(c) => {
                        let key = u32::try_from(i).unwrap_or(u32::MAX);
                        lazy.call::<_, ()>((array.clone(), key, *c))?;
                    }
                    Child::Marker(_) => return Err(unresolved(&ctx)),
                }
            }
            Ok(array.into_value())
        } else {
            let object = Object::new(ctx.clone())?;
            for (key, child) in node.keys.iter().zip(&node.children) {
                match child {
                    Child::Inline(v) => define(&object, key, json_to_js(&ctx, v)?)?,
                    Child::Lazy(c) => lazy.call::<_, ()>((object.clone(), key.as_str(), *c))?,
                    Child::Marker(_) => return Err(unresolved(&ctx)),
                }
            }
            Ok(object.into_value())
        }
    }
}

/// A marker left unresolved (not reachable: [`SpecIndex::from_value`]
/// resolves every one or fails).
fn unresolved(ctx: &Ctx<'_>) -> rquickjs::Error {
    rquickjs::Exception::throw_internal(ctx, "unresolved spec reference")
}

/// Index `value`, returning it as a child and its approximate compact size.
/// With `markers`, an inline marker becomes [`Child::Marker`].
fn build(value: Value, nodes: &mut Vec<Node>, markers: bool) -> (Child, usize) {
    match value {
        Value::Object(map) if markers && inline_refs::is_marker(&map) => {
            let target = map
                .into_iter()
                .next()
                .and_then(|(_, v)| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .unwrap_or_default();
            // Counted as large: the node holding it stays a node.
            (Child::Marker(target), INLINE_BYTES + 1)
        }
        Value::Array(items) => {
            let mut size = 2;
            let mut children = Vec::with_capacity(items.len());
            for item in items {
                let (child, s) = build(item, nodes, markers);
                size += s + 1;
                children.push(child);
            }
            (finish(Vec::new(), children, true, size, nodes), size)
        }
        Value::Object(map) => {
            let mut size = 2;
            let mut keys = Vec::with_capacity(map.len());
            let mut children = Vec::with_capacity(map.len());
            for (key, item) in map {
                let (child, s) = build(item, nodes, markers);
                size += key.len() + 4 + s;
                keys.push(key);
                children.push(child);
            }
            (finish(keys, children, false, size, nodes), size)
        }
        Value::String(s) => {
            let size = s.len() + 2;
            (Child::Inline(Value::String(s)), size)
        }
        other => (Child::Inline(other), 6),
    }
}

/// Keep a container inline when small (all its children are then inline),
/// else register it as a lazy node.
fn finish(
    keys: Vec<String>,
    children: Vec<Child>,
    array: bool,
    size: usize,
    nodes: &mut Vec<Node>,
) -> Child {
    let all_inline = children.iter().all(|c| matches!(c, Child::Inline(_)));
    let id = u32::try_from(nodes.len());
    match id {
        Ok(id) if size > INLINE_BYTES || !all_inline => {
            nodes.push(Node {
                keys,
                children,
                array,
            });
            Child::Lazy(id)
        }
        _ => {
            let values = children.into_iter().map(|c| match c {
                Child::Inline(v) => v,
                // Unreachable: all_inline, or more than u32::MAX nodes.
                Child::Lazy(_) | Child::Marker(_) => Value::Null,
            });
            if array {
                Child::Inline(Value::Array(values.collect()))
            } else {
                Child::Inline(Value::Object(
                    keys.into_iter().zip(values).collect::<Map<_, _>>(),
                ))
            }
        }
    }
}

/// Define `key` as an ordinary data property (unlike `set`, a `__proto__` key
/// becomes an own property, as with `JSON.parse`).
fn define<'js>(object: &Object<'js>, key: &str, value: JsValue<'js>) -> rquickjs::Result<()> {
    object.prop(
        key,
        Property::from(value).writable().enumerable().configurable(),
    )
}

/// Convert a JSON value into a QuickJS value (objects keep key order).
pub(crate) fn json_to_js<'js>(ctx: &Ctx<'js>, value: &Value) -> rquickjs::Result<JsValue<'js>> {
    Ok(match value {
        Value::Null => JsValue::new_null(ctx.clone()),
        Value::Bool(b) => JsValue::new_bool(ctx.clone(), *b),
        Value::Number(n) => match n.as_i64().and_then(|i| i32::try_from(i).ok()) {
            Some(i) => JsValue::new_int(ctx.clone(), i),
            None => JsValue::new_float(ctx.clone(), n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => rquickjs::String::from_str(ctx.clone(), s)?.into_value(),
        Value::Array(items) => {
            let array = Array::new(ctx.clone())?;
            for (i, item) in items.iter().enumerate() {
                array.set(i, json_to_js(ctx, item)?)?;
            }
            array.into_value()
        }
        Value::Object(map) => {
            let object = Object::new(ctx.clone())?;
            for (key, item) in map {
                define(&object, key, json_to_js(ctx, item)?)?;
            }
            object.into_value()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rquickjs::{Context, Runtime};
    use serde_json::json;

    fn big_doc() -> Value {
        let long = "x".repeat(300);
        json!({
            "openapi": "3.0.3",
            "info": {"title": "t"},
            "paths": {
                "/zones": {"get": {"summary": "List zones", "tags": ["zones"], "description": long.clone(),
                    "responses": {"200": {"description": long.clone()}}}},
                "/accounts": {"get": {"summary": "List accounts", "tags": ["accounts"], "__proto__": {"polluted": true},
                    "responses": {"200": {"description": long}}}}
            },
            "list": [1, 2, {"deep": ["a".repeat(400)]}]
        })
    }

    fn eval_json(index: SpecIndex, code: &str) -> String {
        let index = Arc::new(index);
        let rt = Runtime::new().ok();
        let ctx = rt.as_ref().and_then(|rt| Context::full(rt).ok());
        let Some(ctx) = ctx else {
            return "no runtime".into();
        };
        ctx.with(|ctx| {
            let result: rquickjs::Result<String> = (|| {
                let spec = index.root_js(&ctx)?;
                ctx.globals().set("spec", spec)?;
                let v: JsValue = ctx.eval(code)?;
                Ok(ctx
                    .json_stringify(v)?
                    .map(|s| s.to_string())
                    .transpose()?
                    .unwrap_or_default())
            })();
            result.unwrap_or_else(|e| format!("error: {e}: {:?}", ctx.catch()))
        })
    }

    #[test]
    fn small_documents_stay_inline() {
        let index = SpecIndex::from_value(json!({"a": [1, 2, 3], "b": "c"})).unwrap();
        assert_eq!(index.lazy_nodes(), 0);
        assert_eq!(eval_json(index, "spec"), r#"{"a":[1,2,3],"b":"c"}"#);
    }

    #[test]
    fn lazy_document_reads_like_parsed_json() {
        let doc = big_doc();
        let expected = serde_json::to_string(&doc).unwrap_or_default();
        let index = SpecIndex::from_value(doc).unwrap();
        assert!(index.lazy_nodes() > 3, "{}", index.lazy_nodes());
        assert_eq!(eval_json(index, "spec"), expected);
    }

    #[test]
    fn lookups_keys_and_identity() {
        let index = SpecIndex::from_value(big_doc()).unwrap();
        let out = eval_json(
            index,
            r#"({
                keys: Object.keys(spec.paths),
                summary: spec.paths["/zones"].get.summary,
                same: spec.paths === spec.paths,
                entries: Object.entries(spec.paths).map(([p, item]) => p + ":" + item.get.tags[0]),
                proto: Object.getPrototypeOf(spec.paths["/accounts"].get) === Object.prototype,
                own: Object.keys(spec.paths["/accounts"].get).includes("__proto__"),
                polluted: ({}).polluted === undefined,
                isArray: Array.isArray(spec.list) && spec.list.length === 3,
                deep: spec.list[2].deep[0].length,
            })"#,
        );
        assert_eq!(
            out,
            r#"{"keys":["/zones","/accounts"],"summary":"List zones","same":true,"entries":["/zones:zones","/accounts:accounts"],"proto":true,"own":true,"polluted":true,"isArray":true,"deep":400}"#
        );
    }

    #[test]
    fn lazy_properties_can_be_overwritten_and_deleted() {
        let index = SpecIndex::from_value(big_doc()).unwrap();
        let out = eval_json(
            index,
            r#"(() => { spec.paths = 1; const a = spec.paths; delete spec.list; return [a, "list" in spec]; })()"#,
        );
        assert_eq!(out, "[1,false]");
    }

    /// A document with inline markers and the same document inlined.
    fn marked_doc() -> (Value, Value) {
        let zone = json!({"type": "object", "description": "z".repeat(300),
            "properties": {"id": {"type": "string"}, "name": {"type": "string"}}});
        let marker = |p: &str| json!({"x-toolforge-inline": p});
        let marked = json!({
            "openapi": "3.0.3",
            "paths": {
                "/zones": {"get": {"responses": {"200": {"schema": marker("#/components/schemas/Zone")}}}},
                "/zones/{id}": {"get": {"responses": {"200": {"schema": marker("#/components/schemas/Alias")}},
                    "parameters": [marker("#/components/parameters/a~1b")]}}
            },
            "components": {
                "parameters": {"a/b": {"name": "id", "in": "path"}},
                "schemas": {"Zone": zone.clone(), "Alias": marker("#/components/schemas/Zone")}
            },
            "x-toolforge-inline-refs": "note",
            "x-toolforge-generated": "gen"
        });
        let inlined = json!({
            "openapi": "3.0.3",
            "paths": {
                "/zones": {"get": {"responses": {"200": {"schema": zone.clone()}}}},
                "/zones/{id}": {"get": {"responses": {"200": {"schema": zone.clone()}},
                    "parameters": [{"name": "id", "in": "path"}]}}
            },
            "components": {
                "parameters": {"a/b": {"name": "id", "in": "path"}},
                "schemas": {"Zone": zone.clone(), "Alias": zone}
            },
            "x-toolforge-generated": "gen"
        });
        (marked, inlined)
    }

    #[test]
    fn inline_markers_read_as_their_targets() {
        let (marked, inlined) = marked_doc();
        let index = SpecIndex::from_value(marked).unwrap();
        let expected = serde_json::to_string(&inlined).unwrap_or_default();
        assert_eq!(index.to_value(), inlined);
        assert_eq!(eval_json(index, "spec"), expected);
    }

    #[test]
    fn each_occurrence_of_a_shared_target_is_its_own_object() {
        let (marked, _) = marked_doc();
        let index = SpecIndex::from_value(marked).unwrap();
        let out = eval_json(
            index,
            r#"(() => {
                const a = spec.paths["/zones"].get.responses["200"].schema;
                a.properties.id.type = "changed";
                a.extra = 1;
                const b = spec.components.schemas.Zone;
                const c = spec.paths["/zones/{id}"].get.responses["200"].schema;
                return [a === b, b.properties.id.type, "extra" in b, c.properties.id.type, "x-toolforge-inline-refs" in spec];
            })()"#,
        );
        assert_eq!(out, r#"[false,"string",false,"string",false]"#);
    }

    #[test]
    fn markers_are_data_without_the_root_key() {
        let (mut marked, _) = marked_doc();
        if let Some(root) = marked.as_object_mut() {
            root.shift_remove("x-toolforge-inline-refs");
        }
        let expected = serde_json::to_string(&marked).unwrap_or_default();
        let index = SpecIndex::from_value(marked).unwrap();
        assert_eq!(eval_json(index, "spec"), expected);
    }

    #[test]
    fn unresolvable_markers_are_errors() {
        let doc = |components: Value, target: &str| {
            json!({"paths": {"/a": {"x": {"x-toolforge-inline": target}}},
                "components": components, "x-toolforge-inline-refs": "n"})
        };
        let missing = SpecIndex::from_value(doc(json!({}), "#/components/schemas/Nope"));
        assert!(missing.unwrap_err().contains("names nothing"));
        let not_a_pointer = SpecIndex::from_value(doc(json!({}), "components"));
        assert!(not_a_pointer.is_err());
        let root = json!({"x-toolforge-inline": "#/a", "x-toolforge-inline-refs": "n"});
        assert!(SpecIndex::from_value(root).unwrap_err().contains("root"));
        let looped = doc(
            json!({"schemas": {
                "A": {"x-toolforge-inline": "#/components/schemas/B"},
                "B": {"x-toolforge-inline": "#/components/schemas/A"}}}),
            "#/components/schemas/A",
        );
        assert!(SpecIndex::from_value(looped).unwrap_err().contains("chain"));
        let through = doc(
            json!({"schemas": {"A": {"x-toolforge-inline": "#/components/schemas/B"}, "B": {"c": 1}}}),
            "#/components/schemas/A/c",
        );
        assert!(
            SpecIndex::from_value(through)
                .unwrap_err()
                .contains("another marker")
        );
        // Into a small inline value, and an array element.
        let small = doc(
            json!({"schemas": {"S": {"enum": [{"k": "v"}]}}}),
            "#/components/schemas/S/enum/0",
        );
        let index = SpecIndex::from_value(small).unwrap();
        assert_eq!(eval_json(index, "spec.paths['/a'].x"), r#"{"k":"v"}"#);
    }

    #[test]
    fn odd_strings_numbers_and_keys_read_like_parsed_json() {
        let doc = json!({
            "long": "x".repeat(300),
            "small": {"q": "\"quoted\" \\ back\nslash", "u": "\u{2028}é😀\u{0}", "__proto__": {"p": 1}},
            "numbers": [0, -0.0, 1.5, 1e300, -9223372036854775808_i64, 18446744073709551615_u64, 2147483648_u64],
            "flags": [true, false, null],
            "nested": {"deep": {"long": "y".repeat(300), "k": [1, {"a": "b"}]}},
        });
        let text = serde_json::to_string(&doc).unwrap_or_default();
        let index = SpecIndex::from_value(doc.clone()).unwrap();
        assert!(index.lazy_nodes() >= 2, "{}", index.lazy_nodes());
        assert_eq!(index.to_value(), doc);
        // Read in QuickJS, the spec is what JSON.parse makes of the text.
        let code = format!(
            "JSON.stringify(spec) === JSON.stringify(JSON.parse({})) && Object.keys(spec.small).includes('__proto__') && Object.is(spec.numbers[1], -0)",
            Value::from(text)
        );
        assert_eq!(eval_json(index, &code), "true");
    }

    #[test]
    fn invalid_json_is_an_error() {
        assert!(SpecIndex::from_json("{").is_err());
        let ok = SpecIndex::from_json("[1]").map(|i| i.source_bytes());
        assert_eq!(ok, Ok(3));
    }
}
