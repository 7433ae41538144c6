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
//! Accessors cost one `JS_DefineProperty` each: every object with the same
//! key position shares one getter/setter pair, which finds its node through
//! a private map (see `LAZY_JS`); closures per accessor were 40% of a
//! full scan's instructions.
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

use rquickjs::object::{AsProperty, Property, PropertyFlags};
use rquickjs::{Array, Atom, Ctx, Function, IntoAtom, Object, Value as JsValue, qjs};
use serde_json::{Map, Value};

#[path = "inline_refs.rs"]
pub mod inline_refs;

/// Subtrees whose compact JSON is at most this many bytes are built eagerly
/// together with their parent; larger ones are materialised on first access.
pub const INLINE_BYTES: usize = 256;

/// JS helper behind the lazy accessors: `helper(load, store)` returns
/// `tools = [getters, setters, grow, register]`. Each object or array with
/// lazy children is registered (`register(object, nodeId)`, a private
/// `Map`); an accessor is the getter/setter pair for its key's *position* in
/// its node, shared by every node (`grow(n)` creates pairs up to position
/// `n`), so installing one is a single `JS_DefineProperty` from Rust and a
/// node needs no new functions. The getter finds its node through the map
/// (walking the prototype chain, as an inherited data property is read) and
/// asks Rust to build the child and replace the accessor on `this` with a
/// plain data property (`load(nodeId, position, this, tools)`; `store` for an
/// assignment). Nothing here is reachable from the sandboxed code except
/// through the accessors, and every builtin it uses is taken before any code
/// runs, so patching `Map.prototype`, `Reflect` or `Array.prototype` cannot
/// steer a getter to a node the code holds no object of.
const LAZY_JS: &str = r#"(function (load, store) {
  "use strict";
  const define = Reflect.defineProperty;
  const protoOf = Reflect.getPrototypeOf;
  const owners = new Map();
  const ownerOf = Map.prototype.get.bind(owners);
  const register = Map.prototype.set.bind(owners);
  const find = (self) => {
    let owner = self, id;
    while (owner !== null && typeof owner === "object" && (id = ownerOf(owner)) === undefined) {
      owner = protoOf(owner);
    }
    return id;
  };
  const getters = [], setters = [];
  const tools = [getters, setters, null, register];
  tools[2] = (n) => {
    for (let pos = getters.length; pos < n; pos++) {
      define(getters, pos, { __proto__: null, value: function () {
        const id = find(this);
        return id === undefined ? undefined : load(id, pos, this, tools);
      }, writable: true, enumerable: true, configurable: true });
      define(setters, pos, { __proto__: null, value: function (value) {
        const id = find(this);
        if (id !== undefined) store(id, pos, this, value);
      }, writable: true, enumerable: true, configurable: true });
    }
  };
  return tools;
})"#;

/// The helper's functions, handed to [`SpecIndex::materialize`].
struct Tools<'js> {
    getters: Array<'js>,
    setters: Array<'js>,
    grow: Function<'js>,
    register: Function<'js>,
}

impl<'js> Tools<'js> {
    fn from_array(tools: &Array<'js>) -> rquickjs::Result<Self> {
        Ok(Self {
            getters: tools.get(0)?,
            setters: tools.get(1)?,
            grow: tools.get(2)?,
            register: tools.get(3)?,
        })
    }
}

/// An accessor property (enumerable, configurable) from existing getter and
/// setter functions; `rquickjs::object::Accessor` would create new ones.
struct SharedAccessor<'js> {
    get: JsValue<'js>,
    set: JsValue<'js>,
}

/// Marker for [`SharedAccessor`]'s `AsProperty` impl.
struct SharedAccessorMarker;

impl<'js> AsProperty<'js, (SharedAccessorMarker,)> for SharedAccessor<'js> {
    fn config(
        self,
        ctx: &Ctx<'js>,
    ) -> rquickjs::Result<(PropertyFlags, JsValue<'js>, JsValue<'js>, JsValue<'js>)> {
        let flags = qjs::JS_PROP_HAS_GET
            | qjs::JS_PROP_HAS_SET
            | qjs::JS_PROP_ENUMERABLE
            | qjs::JS_PROP_HAS_ENUMERABLE
            | qjs::JS_PROP_CONFIGURABLE
            | qjs::JS_PROP_HAS_CONFIGURABLE;
        let flags = PropertyFlags::try_from(flags).unwrap_or_default();
        Ok((
            flags,
            JsValue::new_undefined(ctx.clone()),
            self.get,
            self.set,
        ))
    }
}

/// A JSON document split into lazily materialisable nodes.
#[derive(Debug)]
pub struct SpecIndex {
    pub(super) nodes: Vec<Node>,
    pub(super) root: Child,
    source_bytes: usize,
}

/// One indexed container: an object or array larger than [`INLINE_BYTES`].
#[derive(Debug)]
pub(super) struct Node {
    /// Object keys in document order; empty for arrays.
    pub(super) keys: Vec<String>,
    pub(super) children: Vec<Child>,
    pub(super) array: bool,
}

/// A node's child: small values inline, large ones by node id.
#[derive(Debug, Clone)]
pub(super) enum Child {
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
                let load = Function::new(
                    ctx.clone(),
                    move |id: u32, pos: u32, target: JsValue<'js>, tools: Array<'js>| {
                        index.open(&Tools::from_array(&tools)?, id, pos, &target)
                    },
                )?;
                let index = Arc::clone(self);
                let store = Function::new(
                    ctx.clone(),
                    move |id: u32, pos: u32, target: JsValue<'js>, value: JsValue<'js>| {
                        index.store(id, pos, &target, value)
                    },
                )?;
                let helper: Function = ctx.eval(LAZY_JS)?;
                let tools: Array = helper.call((load, store))?;
                self.materialize(ctx, &Tools::from_array(&tools)?, *id)
            }
        }
    }

    /// The key at `pos` of node `id`, as an atom, with the node's child.
    fn child_at<'js>(
        &self,
        ctx: &Ctx<'js>,
        id: u32,
        pos: u32,
    ) -> rquickjs::Result<Option<(Atom<'js>, &Child)>> {
        let node = usize::try_from(id).ok().and_then(|i| self.nodes.get(i));
        let at = usize::try_from(pos).ok();
        let Some((node, at)) = node.zip(at) else {
            return Ok(None);
        };
        let Some(child) = node.children.get(at) else {
            return Ok(None);
        };
        let atom = if node.array {
            Atom::from_u32(ctx.clone(), pos)?
        } else {
            match node.keys.get(at) {
                Some(key) => Atom::from_str(ctx.clone(), key)?,
                None => return Ok(None),
            }
        };
        Ok(Some((atom, child)))
    }

    /// A getter's first read: build child `pos` of node `parent` and make it
    /// a data property of `target` (the object the getter was read on).
    fn open<'js>(
        &self,
        tools: &Tools<'js>,
        parent: u32,
        pos: u32,
        target: &JsValue<'js>,
    ) -> rquickjs::Result<JsValue<'js>> {
        let ctx = target.ctx().clone();
        let Some((atom, child)) = self.child_at(&ctx, parent, pos)? else {
            return Ok(JsValue::new_undefined(ctx));
        };
        let value = match child {
            Child::Inline(v) => json_to_js(&ctx, v)?,
            Child::Lazy(id) => self.materialize(&ctx, tools, *id)?,
            Child::Marker(_) => return Err(unresolved(&ctx)),
        };
        if let Some(object) = target.as_object() {
            define(object, atom, value.clone())?;
        }
        Ok(value)
    }

    /// An assignment to a lazy property: it becomes a data property of
    /// `target` holding `value`.
    fn store<'js>(
        &self,
        parent: u32,
        pos: u32,
        target: &JsValue<'js>,
        value: JsValue<'js>,
    ) -> rquickjs::Result<()> {
        let ctx = target.ctx().clone();
        match (self.child_at(&ctx, parent, pos)?, target.as_object()) {
            (Some((atom, _)), Some(object)) => define(object, atom, value),
            _ => Ok(()),
        }
    }

    /// Build node `id` one level deep: small children as values, large ones
    /// as lazy accessors.
    fn materialize<'js>(
        &self,
        ctx: &Ctx<'js>,
        tools: &Tools<'js>,
        id: u32,
    ) -> rquickjs::Result<JsValue<'js>> {
        let Some(node) = usize::try_from(id).ok().and_then(|i| self.nodes.get(i)) else {
            return Err(rquickjs::Exception::throw_internal(
                ctx,
                "unknown spec node",
            ));
        };
        let has_lazy = node.children.iter().any(|c| !matches!(c, Child::Inline(_)));
        if has_lazy && tools.getters.len() < node.children.len() {
            tools.grow.call::<_, ()>((node.children.len(),))?;
        }
        let object = if node.array {
            let array = Array::new(ctx.clone())?;
            for (i, child) in node.children.iter().enumerate() {
                match child {
                    Child::Inline(v) => array.set(i, json_to_js(ctx, v)?)?,
                    Child::Lazy(_) => {
                        let key = u32::try_from(i).unwrap_or(u32::MAX);
                        install(tools, &array, i, Atom::from_u32(ctx.clone(), key)?)?;
                    }
                    Child::Marker(_) => return Err(unresolved(ctx)),
                }
            }
            array.into_object()
        } else {
            let object = Object::new(ctx.clone())?;
            for (i, (key, child)) in node.keys.iter().zip(&node.children).enumerate() {
                match child {
                    Child::Inline(v) => define(&object, key.as_str(), json_to_js(ctx, v)?)?,
                    Child::Lazy(_) => {
                        install(tools, &object, i, Atom::from_str(ctx.clone(), key)?)?
                    }
                    Child::Marker(_) => return Err(unresolved(ctx)),
                }
            }
            object
        };
        if has_lazy {
            tools.register.call::<_, ()>((object.clone(), id))?;
        }
        Ok(object.into_value())
    }
}

/// Define `atom` on `object` as the shared lazy accessor of position `pos`.
fn install<'js>(
    tools: &Tools<'js>,
    object: &Object<'js>,
    pos: usize,
    atom: Atom<'js>,
) -> rquickjs::Result<()> {
    let get: JsValue = tools.getters.get(pos)?;
    let set: JsValue = tools.setters.get(pos)?;
    object.prop(atom, SharedAccessor { get, set })
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
pub(super) fn define<'js>(
    object: &Object<'js>,
    key: impl IntoAtom<'js>,
    value: JsValue<'js>,
) -> rquickjs::Result<()> {
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
#[path = "lazy_tests.rs"]
mod tests;
