//! The `spec` global of `search` as one frozen object graph per worker.
//!
//! Materialising the parts of the spec a call reads ([`super::lazy`]) cost
//! about half of a full scan's instructions on every call. A worker instead
//! builds the whole document once, as QuickJS objects, in a QuickJS runtime
//! it keeps; every `search` then runs in a fresh context of that runtime
//! whose global `spec` is the graph's root. Nothing of the graph is built
//! per call, and freeing a run frees only what the run made.
//!
//! The graph lives in its own realm (a context with the standard
//! intrinsics but no `eval`: it never compiles code), and that realm is
//! frozen deeply before any run: the spec's objects and arrays, and every
//! object reachable from the realm's global or its built-ins' hidden
//! prototypes (array, string, map, set, regexp and helper iterators), by
//! property, accessor or prototype. A run reaches the realm through the
//! spec (`spec.constructor`, `Object.getPrototypeOf(spec.paths)`, errors
//! its built-ins throw), so assignments, deletions, `defineProperty`,
//! prototype pollution and changes to its `Array.prototype` fail there; the
//! run's own intrinsics are its context's, fresh per run. The two setters
//! of the realm that write realm-wide state (`Error.prepareStackTrace` and
//! `Error.stackTraceLimit`) become read-only data properties first.
//!
//! After each run the context is dropped; if a job is still queued, the
//! worker drops the whole runtime and builds a new one for the next search
//! ([`FrozenSpec::is_spent`]).
//!
//! Differences from parsed JSON a run can see: `spec` is read-only, the
//! objects of one shared `components` entry are the same object at each
//! place it is used, and `instanceof Object`/`Array` is false for them (they
//! belong to the other realm; `Array.isArray` and every method work).

use rquickjs::context::intrinsic::{
    Date, Eval, Json, MapSet, Promise as PromiseIntrinsic, Proxy, RegExp, RegExpCompiler,
    TypedArrays,
};
use rquickjs::{Array, Context, Ctx, Function, Object, Persistent, Runtime, Value as JsValue};

use serde_json::Value;

use super::lazy::{Child, SpecIndex, define, json_to_js};

/// The intrinsics of a run's context.
pub(super) type RunIntrinsics = (
    Date,
    Eval,
    RegExpCompiler,
    RegExp,
    Json,
    Proxy,
    MapSet,
    TypedArrays,
    PromiseIntrinsic,
);

/// The spec realm's intrinsics: a run's, without `eval` (and so without the
/// `Function` constructor), so code reaching the realm cannot compile code
/// there.
type RealmIntrinsics = (
    Date,
    RegExpCompiler,
    RegExp,
    Json,
    Proxy,
    MapSet,
    TypedArrays,
    PromiseIntrinsic,
);

/// Run in a helper context over the spec realm's global (`G`): pins the
/// realm-wide `Error` settings, reaches the prototypes no global property
/// leads to, and freezes everything reachable. Runs once per build, before
/// any sandboxed code.
const HARDEN_JS: &str = r#"(function (G) {
  "use strict";
  const E = G.Error;
  for (const key of ["prepareStackTrace", "stackTraceLimit"]) {
    const d = Reflect.getOwnPropertyDescriptor(E, key);
    if (d === undefined) continue;
    const value = d.get !== undefined ? d.get.call(E) : d.value;
    if (!Reflect.defineProperty(E, key, { value, writable: false, enumerable: false, configurable: false })) {
      throw new TypeError("cannot pin Error." + key);
    }
  }
  const seen = new Set(), todo = [];
  const add = (v) => {
    if (((typeof v === "object" && v !== null) || typeof v === "function") && !seen.has(v)) {
      seen.add(v);
      todo.push(v);
    }
  };
  const values = G.Array.prototype.values;
  add(G);
  add(values.call(new G.Array()));
  add(G.String.prototype[Symbol.iterator].call(""));
  add(new G.Map().entries());
  add(new G.Set().values());
  add(G.RegExp.prototype[Symbol.matchAll].call(new G.RegExp("x", "g"), ""));
  if (G.Iterator !== undefined) {
    add(G.Iterator.prototype.map.call(values.call(new G.Array()), (x) => x));
    add(G.Iterator.from({ next() { return { done: true, value: undefined }; } }));
    if (typeof G.Iterator.concat === "function") add(G.Iterator.concat());
    if (typeof G.Iterator.zip === "function") add(G.Iterator.zip([]));
  }
  while (todo.length > 0) {
    const o = todo.pop();
    Object.freeze(o);
    if (!Object.isFrozen(o)) throw new TypeError("cannot freeze a realm object");
    add(Reflect.getPrototypeOf(o));
    for (const key of Reflect.ownKeys(o)) {
      const d = Reflect.getOwnPropertyDescriptor(o, key);
      if (d !== undefined) { add(d.value); add(d.get); add(d.set); }
    }
  }
  return seen.size;
})"#;

/// A worker's spec as one deeply frozen QuickJS object graph, with the
/// runtime that holds it.
pub struct FrozenSpec {
    // Field order is drop order: the realm and the root before the runtime.
    root: Persistent<JsValue<'static>>,
    _realm: Context,
    runtime: Runtime,
    base_bytes: usize,
    spent: bool,
}

impl std::fmt::Debug for FrozenSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrozenSpec")
            .field("base_bytes", &self.base_bytes)
            .field("spent", &self.spent)
            .finish_non_exhaustive()
    }
}

/// Why a [`FrozenSpec`] could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the frozen spec: {0}")]
pub struct FrozenSpecError(String);

impl FrozenSpec {
    /// Build the graph of `index` and freeze its realm.
    ///
    /// # Errors
    /// QuickJS failing to allocate or to freeze an object.
    pub fn build(index: &SpecIndex) -> Result<Self, FrozenSpecError> {
        let fail = |e: rquickjs::Error| FrozenSpecError(e.to_string());
        let runtime = Runtime::new().map_err(fail)?;
        let realm = Context::custom::<RealmIntrinsics>(&runtime).map_err(fail)?;
        let (root, global) = realm
            .with(|ctx| -> rquickjs::Result<_> {
                let freeze: Function = ctx.globals().get::<_, Object>("Object")?.get("freeze")?;
                let mut built = vec![None; index.nodes.len()];
                let root = build_child(&ctx, index, &index.root, &freeze, &mut built)?;
                Ok((
                    Persistent::save(&ctx, root),
                    Persistent::save(&ctx, ctx.globals()),
                ))
            })
            .map_err(fail)?;
        let helper = Context::custom::<RunIntrinsics>(&runtime).map_err(fail)?;
        helper
            .with(|ctx| -> rquickjs::Result<()> {
                let harden: Function = ctx.eval(HARDEN_JS)?;
                let global = global.restore(&ctx)?;
                harden.call::<_, u32>((global,))?;
                Ok(())
            })
            .map_err(|e| match e {
                rquickjs::Error::Exception => FrozenSpecError("hardening threw".into()),
                other => fail(other),
            })?;
        drop(helper);
        runtime.run_gc();
        let base_bytes = heap_bytes(&runtime);
        Ok(Self {
            root,
            _realm: realm,
            runtime,
            base_bytes,
            spent: false,
        })
    }

    /// Bytes of QuickJS heap the graph and its realm hold.
    pub fn base_bytes(&self) -> usize {
        self.base_bytes
    }

    /// True once a run left something behind: the owner drops this value
    /// and builds a new one before the next run.
    pub fn is_spent(&self) -> bool {
        self.spent
    }

    /// Run `f` in a fresh context of the graph's runtime with the root as
    /// its argument, under `memory_bytes` of heap for the run, a stack
    /// limit and `interrupt`; then drop the context and check that no job
    /// stayed queued.
    ///
    /// Nothing here walks the heap (a collection or a memory count walks the
    /// whole graph: about 30 ms on a 5 MB spec of 1,500 operations, more than a
    /// lookup costs). A run's acyclic garbage is freed as the run drops it;
    /// cycles (the run's context among them) wait for QuickJS's own
    /// collection, which starts once the heap is an eighth of
    /// `memory_bytes` past the graph, so it runs once per many searches.
    /// The limit allows for that eighth on top of the run's own heap.
    pub(super) fn with_run<R>(
        &mut self,
        memory_bytes: usize,
        stack_bytes: usize,
        interrupt: Box<dyn FnMut() -> bool>,
        f: impl for<'js> FnOnce(&Ctx<'js>, JsValue<'js>) -> R,
    ) -> Result<R, rquickjs::Error> {
        let runtime = &self.runtime;
        let garbage = (memory_bytes / 8).max(1 << 20);
        runtime.set_memory_limit(
            self.base_bytes
                .saturating_add(memory_bytes)
                .saturating_add(garbage),
        );
        runtime.set_max_stack_size(stack_bytes);
        runtime.set_gc_threshold(self.base_bytes.saturating_add(garbage));
        runtime.set_interrupt_handler(Some(interrupt));
        let result = Context::custom::<RunIntrinsics>(runtime).and_then(|context| {
            let out = context.with(|ctx| {
                let root = self.root.clone().restore(&ctx)?;
                Ok(f(&ctx, root))
            });
            drop(context);
            out
        });
        runtime.set_interrupt_handler(None);
        runtime.set_memory_limit(0);
        if runtime.is_job_pending() {
            self.spent = true;
        }
        result
    }
}

fn heap_bytes(runtime: &Runtime) -> usize {
    usize::try_from(runtime.memory_usage().malloc_size).unwrap_or(usize::MAX)
}

/// Build `child` as frozen QuickJS values; lazy nodes are built once and
/// shared (a marker and its target read as the same object).
fn build_child<'js>(
    ctx: &Ctx<'js>,
    index: &SpecIndex,
    child: &Child,
    freeze: &Function<'js>,
    built: &mut Vec<Option<JsValue<'js>>>,
) -> rquickjs::Result<JsValue<'js>> {
    let id = match child {
        Child::Inline(value) => return frozen_json(ctx, value, freeze),
        Child::Marker(_) => {
            return Err(rquickjs::Exception::throw_internal(
                ctx,
                "unresolved spec reference",
            ));
        }
        Child::Lazy(id) => *id,
    };
    let at = usize::try_from(id).unwrap_or(usize::MAX);
    if let Some(Some(done)) = built.get(at) {
        return Ok(done.clone());
    }
    let Some(node) = index.nodes.get(at) else {
        return Err(rquickjs::Exception::throw_internal(
            ctx,
            "unknown spec node",
        ));
    };
    let value = if node.array {
        let array = Array::new(ctx.clone())?;
        for (i, child) in node.children.iter().enumerate() {
            array.set(i, build_child(ctx, index, child, freeze, built)?)?;
        }
        array.into_value()
    } else {
        let object = Object::new(ctx.clone())?;
        for (key, child) in node.keys.iter().zip(&node.children) {
            let value = build_child(ctx, index, child, freeze, built)?;
            define(&object, key.as_str(), value)?;
        }
        object.into_value()
    };
    freeze.call::<_, ()>((value.clone(),))?;
    if let Some(slot) = built.get_mut(at) {
        *slot = Some(value.clone());
    }
    Ok(value)
}

/// A JSON value as QuickJS values, every container frozen.
fn frozen_json<'js>(
    ctx: &Ctx<'js>,
    value: &Value,
    freeze: &Function<'js>,
) -> rquickjs::Result<JsValue<'js>> {
    let built = match value {
        Value::Array(items) => {
            let array = Array::new(ctx.clone())?;
            for (i, item) in items.iter().enumerate() {
                array.set(i, frozen_json(ctx, item, freeze)?)?;
            }
            array.into_value()
        }
        Value::Object(map) => {
            let object = Object::new(ctx.clone())?;
            for (key, item) in map {
                define(&object, key.as_str(), frozen_json(ctx, item, freeze)?)?;
            }
            object.into_value()
        }
        scalar => return json_to_js(ctx, scalar),
    };
    freeze.call::<_, ()>((built.clone(),))?;
    Ok(built)
}

#[cfg(test)]
#[path = "frozen_tests.rs"]
mod tests;
