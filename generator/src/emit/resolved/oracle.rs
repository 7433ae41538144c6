//! The test oracle of the resolved document: [`resolve_document`] builds
//! the fully inlined document as a value tree, the straightforward way the
//! production writer ([`super::write_document`]) is checked against, and
//! [`split_merged_paths`], the same for the writer's split of merged paths. Only
//! tests compile it (`cfg(test)` or the `oracles` feature).

use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use super::{DEPTH_FACTOR, NODES_FACTOR, push_token};
use crate::error::{GenerateError, Result, escape_token};
use crate::ir::MergedPaths;
use crate::load::Document;
use crate::refs::{Ctx, child_ctx, invalid, resolve_ref};
use crate::schema::{Cycles, Limits};
use crate::small_map;

/// Copies `doc` with every local `$ref` inlined (paths, parameters, request
/// bodies, responses, schemas, components); literal data (`example`,
/// `default`, `enum`, `x-*`) is copied as is. Keys next to a `$ref` are kept
/// and override the inlined target's.
///
/// Bounds: nesting ≤ `limits.max_depth × DEPTH_FACTOR` (default 256) and
/// at most `limits.max_nodes × NODES_FACTOR` values (default 20,000,000).
///
/// # Errors
/// [`GenerateError::TooDeep`] / [`GenerateError::TooLarge`] past those
/// bounds, and the reference errors of [`resolve_ref`].
pub fn resolve_document(doc: &Document, limits: &Limits) -> Result<Value> {
    resolve_with(doc, limits, true)
}

fn resolve_with(doc: &Document, limits: &Limits, memoise: bool) -> Result<Value> {
    let cycles = Cycles::compute(doc);
    let mut resolver = Resolver {
        doc,
        cycles: &cycles,
        max_depth: limits.max_depth.saturating_mul(DEPTH_FACTOR),
        max_nodes: limits.max_nodes.saturating_mul(NODES_FACTOR),
        nodes: 0,
        branch: Vec::new(),
        open_sccs: vec![0; cycles.scc_count()],
        cache: HashMap::default(),
        fills: Vec::new(),
        memoise,
    };
    let mut pointer = String::new();
    let (mut value, _) = resolver.walk(&doc.root, &mut pointer, Ctx::Root, 0)?;
    // Components were left as placeholders: move their memoised expansions
    // in now that no further copies are needed (saves a copy and a drop).
    let Resolver {
        fills, mut cache, ..
    } = resolver;
    for (kind, name, key) in fills {
        let Some(shared) = cache.remove(&key) else {
            continue;
        };
        let expanded = Rc::try_unwrap(shared).unwrap_or_else(|rc| Expanded {
            value: rc.value.clone(),
            nodes: rc.nodes,
            height: rc.height,
        });
        if let Some(slot) = value
            .get_mut("components")
            .and_then(|c| c.get_mut(&kind))
            .and_then(|k| k.get_mut(&name))
        {
            *slot = expanded.value;
        }
    }
    Ok(value)
}

/// One memoised expansion.
struct Expanded {
    value: Value,
    nodes: usize,
    height: usize,
}

/// An inlined target: shared from the memo, or owned.
enum Expansion {
    Shared(Rc<Expanded>),
    Owned(Value, usize),
}

type CacheKey = (String, Ctx);

struct Resolver<'a> {
    doc: &'a Document,
    cycles: &'a Cycles,
    max_depth: usize,
    max_nodes: usize,
    nodes: usize,
    /// Targets being inlined on the current branch.
    branch: Vec<String>,
    /// Members of each SCC on the branch.
    open_sccs: Vec<u32>,
    cache: HashMap<CacheKey, Rc<Expanded>>,
    /// Component entries left as placeholders: (kind, name, memo key).
    fills: Vec<(String, String, CacheKey)>,
    /// Off only in tests, to compare against plain expansion.
    memoise: bool,
}

impl Resolver<'_> {
    fn too_deep(&self, pointer: &str) -> GenerateError {
        GenerateError::TooDeep {
            file: self.doc.file.clone(),
            pointer: pointer.to_string(),
            limit: self.max_depth,
        }
    }

    fn count(&mut self, n: usize, pointer: &str) -> Result<()> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.max_nodes {
            return Err(GenerateError::TooLarge {
                file: self.doc.file.clone(),
                pointer: pointer.to_string(),
                limit: self.max_nodes,
            });
        }
        Ok(())
    }

    /// Copies `value` (at `pointer`, in context `ctx`) with refs inlined.
    /// Returns the copy and its height. `pointer` is restored on return.
    fn walk(
        &mut self,
        value: &Value,
        pointer: &mut String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<(Value, usize)> {
        if depth > self.max_depth {
            return Err(self.too_deep(pointer));
        }
        self.count(1, pointer)?;
        match value {
            Value::Object(map) => {
                if ctx.holds_refs() && small_map::has(map, "$ref") {
                    return self.walk_ref(map, pointer, ctx, depth);
                }
                let mut out = Map::with_capacity(map.len());
                let mut height = 0;
                for (key, child) in map {
                    let len = pointer.len();
                    push_token(pointer, key);
                    let c = child_ctx(ctx, Some(key));
                    let walked = if ctx == Ctx::Components && c != Ctx::Data {
                        self.walk_components(child, key, pointer, c, depth + 1)
                    } else {
                        self.walk(child, pointer, c, depth + 1)
                    };
                    pointer.truncate(len);
                    let (v, h) = walked?;
                    height = height.max(h + 1);
                    out.insert(key.clone(), v);
                }
                Ok((Value::Object(out), height))
            }
            Value::Array(items) => {
                let c = child_ctx(ctx, None);
                let mut out = Vec::with_capacity(items.len());
                let mut height = 0;
                for (i, child) in items.iter().enumerate() {
                    let len = pointer.len();
                    push_token(pointer, &i.to_string());
                    let walked = self.walk(child, pointer, c, depth + 1);
                    pointer.truncate(len);
                    let (v, h) = walked?;
                    height = height.max(h + 1);
                    out.push(v);
                }
                Ok((Value::Array(out), height))
            }
            scalar => Ok((scalar.clone(), 0)),
        }
    }

    /// One `components/<kind>` map: each entry is walked as a target, so
    /// it is memoised and a self-reference inside it is marked circular.
    /// Memoised entries are left as placeholders, filled at the end.
    fn walk_components(
        &mut self,
        value: &Value,
        kind: &str,
        pointer: &mut String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<(Value, usize)> {
        let Value::Object(entries) = value else {
            return self.walk(value, pointer, ctx, depth);
        };
        if depth > self.max_depth {
            return Err(self.too_deep(pointer));
        }
        self.count(1, pointer)?;
        let entry_ctx = match ctx {
            Ctx::SchemaMap => Ctx::Schema,
            Ctx::Examples => Ctx::ExampleObj,
            _ => Ctx::Node,
        };
        let mut out = Map::with_capacity(entries.len());
        let mut height = 0;
        for (name, entry) in entries {
            let mut target_pointer = pointer.clone();
            push_token(&mut target_pointer, name);
            let (v, h) = match self.expand(entry, target_pointer, entry_ctx, depth + 1)? {
                Expansion::Shared(shared) => {
                    let key = (format!("{pointer}/{}", escape_token(name)), entry_ctx);
                    self.fills.push((kind.to_string(), name.clone(), key));
                    (Value::Null, shared.height)
                }
                Expansion::Owned(v, h) => (v, h),
            };
            height = height.max(h + 1);
            out.insert(name.clone(), v);
        }
        Ok((Value::Object(out), height))
    }

    fn walk_ref(
        &mut self,
        map: &Map<String, Value>,
        pointer: &mut String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<(Value, usize)> {
        let Some(reference) = small_map::get(map, "$ref").and_then(Value::as_str) else {
            return Err(invalid(&self.doc.file, pointer, "`$ref` must be a string"));
        };
        let doc = self.doc;
        let (target, target_pointer) = resolve_ref(doc, reference, pointer)?;
        let (mut out, mut height) = if self.branch.contains(&target_pointer) {
            (json!({ "$circular": format!("#{target_pointer}") }), 1)
        } else {
            let target_ctx = match ctx {
                Ctx::Schema | Ctx::ExampleObj => ctx,
                _ => Ctx::Node,
            };
            match self.expand(target, target_pointer, target_ctx, depth + 1)? {
                Expansion::Shared(shared) => (shared.value.clone(), shared.height),
                Expansion::Owned(v, h) => (v, h),
            }
        };
        if map.len() > 1
            && let Value::Object(out) = &mut out
        {
            for (key, child) in map {
                if key == "$ref" {
                    continue;
                }
                let len = pointer.len();
                push_token(pointer, key);
                let walked = self.walk(child, pointer, child_ctx(ctx, Some(key)), depth + 1);
                pointer.truncate(len);
                let (v, h) = walked?;
                height = height.max(h + 1);
                out.insert(key.clone(), v);
            }
        }
        Ok((out, height))
    }

    /// Inlines a reference target, memoised when its SCC is not open.
    fn expand(
        &mut self,
        target: &Value,
        target_pointer: String,
        ctx: Ctx,
        depth: usize,
    ) -> Result<Expansion> {
        let scc = self.cycles.scc_of(&target_pointer);
        let cacheable = self.memoise && scc.is_some_and(|s| self.open_sccs.get(s) == Some(&0));
        let key = (target_pointer, ctx);
        if cacheable && let Some(hit) = self.cache.get(&key).cloned() {
            if depth + hit.height > self.max_depth {
                return Err(self.too_deep(&key.0));
            }
            self.count(hit.nodes, &key.0)?;
            return Ok(Expansion::Shared(hit));
        }
        let before = self.nodes;
        self.branch.push(key.0.clone());
        if let Some(open) = scc.and_then(|s| self.open_sccs.get_mut(s)) {
            *open += 1;
        }
        let mut pointer = key.0.clone();
        let walked = self.walk(target, &mut pointer, ctx, depth);
        if let Some(open) = scc.and_then(|s| self.open_sccs.get_mut(s)) {
            *open -= 1;
        }
        self.branch.pop();
        let (value, height) = walked?;
        if !cacheable {
            return Ok(Expansion::Owned(value, height));
        }
        let shared = Rc::new(Expanded {
            value,
            nodes: self.nodes - before,
            height,
        });
        self.cache.insert(key, Rc::clone(&shared));
        Ok(Expansion::Shared(shared))
    }
}

fn rewrite_params(params: &mut Value, selector: &str, id_param: &str, real_id: &str, scope: &str) {
    let Value::Array(list) = params else { return };
    list.retain(|p| {
        !(p.get("in").and_then(Value::as_str) == Some("path")
            && p.get("name").and_then(Value::as_str) == Some(selector))
    });
    for p in list.iter_mut() {
        if p.get("in").and_then(Value::as_str) == Some("path")
            && p.get("name").and_then(Value::as_str) == Some(id_param)
        {
            p["name"] = Value::String(real_id.to_string());
            p["description"] = Value::String(format!("The {scope} identifier."));
        }
    }
}

/// Replaces each merged path item by its concrete variants, in place order:
/// the value-tree oracle of the resolved-spec writer's split (tests only).
pub fn split_merged_paths(spec: &mut Value, merged: &MergedPaths) {
    let Some(Value::Object(paths)) = spec.get_mut("paths") else {
        return;
    };
    let old = std::mem::take(paths);
    let mut new = Map::with_capacity(old.len());
    for (path, item) in old {
        let Some(m) = merged.get(&path) else {
            new.insert(path, item);
            continue;
        };
        for variant in &m.variants {
            let (real_id, scope) = (variant.id.as_str(), variant.noun.as_str());
            let mut item = item.clone();
            if let Value::Object(obj) = &mut item {
                for (key, entry) in obj.iter_mut() {
                    if key == "parameters" {
                        rewrite_params(entry, &m.selector, &m.id_param, real_id, scope);
                    } else if let Some(params) = entry.get_mut("parameters") {
                        rewrite_params(params, &m.selector, &m.id_param, real_id, scope);
                    }
                }
            }
            new.insert(variant.path.clone(), item);
        }
    }
    *paths = new;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(root: Value) -> Document {
        Document {
            root,
            file: "spec.json".into(),
            openapi_version: "3.0.3".into(),
        }
    }

    fn resolve(d: &Document) -> Value {
        let fast = resolve_document(d, &Limits::default()).unwrap();
        let plain = resolve_with(d, &Limits::default(), false).unwrap();
        assert_eq!(
            serde_json::to_string(&fast).unwrap(),
            serde_json::to_string(&plain).unwrap(),
            "memoised and plain expansion differ"
        );
        fast
    }

    #[test]
    fn inlines_everything_and_keeps_data() {
        let d = doc(json!({
            "openapi": "3.0.3",
            "x-top": {"$ref": "#/not/resolved"},
            "paths": {"/pets/{id}": {
                "parameters": [{"$ref": "#/components/parameters/Id"}],
                "get": {
                    "x-cfPermissionsRequired": {"enum": ["#/read"]},
                    "responses": {"200": {"$ref": "#/components/responses/Pet"}}
                },
                "put": {"requestBody": {"$ref": "#/components/requestBodies/Pet"}, "responses": {}}
            }},
            "components": {
                "parameters": {"Id": {"name": "id", "in": "path", "required": true, "schema": {"$ref": "#/components/schemas/Id"}}},
                "requestBodies": {"Pet": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}},
                "responses": {"Pet": {"description": "a pet", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Pet"},
                    "example": {"$ref": "literal"},
                    "examples": {"one": {"$ref": "#/components/examples/One"}}
                }}}},
                "examples": {"One": {"value": {"$ref": "also literal"}}},
                "schemas": {
                    "Id": {"type": "string", "x-go-type": "ID"},
                    "Pet": {"type": "object", "properties": {
                        "id": {"$ref": "#/components/schemas/Id", "description": "kept"},
                        "$ref": {"type": "string"}
                    }, "default": {"$ref": "data"}}
                }
            }
        }));
        let r = resolve(&d);
        let path = &r["paths"]["/pets/{id}"];
        assert_eq!(
            path["parameters"][0]["schema"],
            json!({"type": "string", "x-go-type": "ID"})
        );
        let media = &path["get"]["responses"]["200"]["content"]["application/json"];
        assert_eq!(
            media["schema"]["properties"]["id"],
            json!({"type": "string", "x-go-type": "ID", "description": "kept"})
        );
        assert_eq!(
            media["schema"]["properties"]["$ref"],
            json!({"type": "string"})
        );
        assert_eq!(media["schema"]["default"], json!({"$ref": "data"}));
        assert_eq!(media["example"], json!({"$ref": "literal"}));
        assert_eq!(
            media["examples"]["one"],
            json!({"value": {"$ref": "also literal"}})
        );
        assert_eq!(
            path["get"]["x-cfPermissionsRequired"],
            json!({"enum": ["#/read"]})
        );
        assert_eq!(r["x-top"], json!({"$ref": "#/not/resolved"}));
        assert_eq!(
            path["put"]["requestBody"]["content"]["application/json"]["schema"],
            media["schema"]
        );
        assert_eq!(r["components"]["schemas"]["Pet"], media["schema"]);
    }

    #[test]
    fn marks_cycles_as_circular() {
        let d = doc(json!({
            "openapi": "3.0.3",
            "paths": {"/t": {"get": {"responses": {"200": {"description": "t", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tree"}}}}}}}},
            "components": {"schemas": {
                "Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}}}},
                "A": {"properties": {"b": {"$ref": "#/components/schemas/B"}}},
                "B": {"properties": {"a": {"$ref": "#/components/schemas/A"}, "t": {"$ref": "#/components/schemas/Tree"}}},
                "C": {"properties": {"a1": {"$ref": "#/components/schemas/A"}, "a2": {"$ref": "#/components/schemas/A"}, "d": {"$ref": "#/components/schemas/D"}}},
                "D": {"properties": {"c": {"$ref": "#/components/schemas/C"}, "b": {"$ref": "#/components/schemas/B"}}}
            }}
        }));
        let r = resolve(&d);
        let circular = |name: &str| json!({"$circular": format!("#/components/schemas/{name}")});
        let s = &r["components"]["schemas"];
        assert_eq!(
            s["Tree"]["properties"]["children"]["items"],
            circular("Tree")
        );
        let response =
            &r["paths"]["/t"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
        assert_eq!(response, &s["Tree"]);
        assert_eq!(s["A"]["properties"]["b"]["properties"]["a"], circular("A"));
        assert_eq!(s["B"]["properties"]["a"]["properties"]["b"], circular("B"));
        assert_eq!(s["B"]["properties"]["t"], s["Tree"]);
        assert_eq!(s["C"]["properties"]["a1"], s["A"]);
        assert_eq!(s["C"]["properties"]["d"]["properties"]["c"], circular("C"));
        assert_eq!(
            s["C"]["properties"]["d"]["properties"]["b"]["properties"]["a"]["properties"]["b"],
            circular("B")
        );
    }

    #[test]
    fn reference_errors_surface() {
        let d = doc(
            json!({"openapi": "3.0.3", "paths": {"/x": {"get": {"parameters": [{"$ref": "#/components/parameters/Nope"}]}}}}),
        );
        let e = resolve_document(&d, &Limits::default()).unwrap_err();
        assert!(
            matches!(&e, GenerateError::DanglingRef { pointer, .. } if pointer == "/paths/~1x/get/parameters/0"),
            "{e}"
        );
        let d = doc(
            json!({"openapi": "3.0.3", "components": {"schemas": {"A": {"$ref": "https://example.com/a.json"}}}}),
        );
        let e = resolve_document(&d, &Limits::default()).unwrap_err();
        assert!(matches!(e, GenerateError::RemoteRef { .. }), "{e}");
    }

    #[test]
    fn bounds_depth_and_size() {
        let mut schemas = Map::new();
        for i in 0..10_000 {
            schemas.insert(
                format!("S{i}"),
                json!({"properties": {"next": {"$ref": format!("#/components/schemas/S{}", i + 1)}}}),
            );
        }
        schemas.insert("S10000".into(), json!({"type": "string"}));
        let mut root = json!({"openapi": "3.0.3", "components": {}});
        root["components"]["schemas"] = Value::Object(schemas);
        let e = resolve_document(&doc(root), &Limits::default()).unwrap_err();
        assert!(
            matches!(e, GenerateError::TooDeep { limit: 256, .. }),
            "{e}"
        );

        let mut schemas = Map::new();
        for i in 0..30 {
            let next = json!({"$ref": format!("#/components/schemas/S{}", i + 1)});
            schemas.insert(
                format!("S{i}"),
                json!({"properties": {"a": next.clone(), "b": next}}),
            );
        }
        schemas.insert("S30".into(), json!({"type": "string"}));
        let mut root = json!({"openapi": "3.0.3", "components": {}});
        root["components"]["schemas"] = Value::Object(schemas);
        let limits = Limits {
            max_depth: 64,
            max_nodes: 1_000,
        };
        let e = resolve_document(&doc(root), &limits).unwrap_err();
        assert!(
            matches!(e, GenerateError::TooLarge { limit: 100_000, .. }),
            "{e}"
        );

        let deep = crate::schema::nest_for_tests(json!({"type": "string"}), 10_000);
        let mut root = json!({"openapi": "3.0.3", "components": {"schemas": {}}});
        root["components"]["schemas"]["Deep"] = deep;
        let d = doc(root);
        let e = resolve_document(&d, &Limits::default()).unwrap_err();
        assert!(matches!(e, GenerateError::TooDeep { .. }), "{e}");
        crate::schema::drop_deep(d.root);
    }
}
