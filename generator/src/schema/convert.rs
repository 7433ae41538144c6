//! The per-tool schema converter: `$ref` inlining, `$defs` for recursive
//! schemas, and the depth / size bounds.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde_json::{Map, Value, json};

use super::keywords;
use super::share::{BodyScan, DefBody, EqualPairs, written_refs};
use super::{Cycles, Limits, SchemaMode};
use crate::error::{GenerateError, Result, push_pointer};
use crate::load::{Document, kind_name};
use crate::refs::{deref, invalid, resolve_ref};
use crate::small_map;

/// Converts OpenAPI 3.0 schema objects to JSON Schema 2020-12 for one tool.
///
/// Local `$ref`s are inlined, except those to schemas that [`Cycles`] marks
/// recursive (or that turn out to recurse through non-component pointers):
/// those become `{"$ref": "#/$defs/<Name>"}` and the converted schema is
/// collected once in the `$defs` returned by [`SchemaConverter::into_defs`].
/// A top-level `$ref` to a recursive schema is inlined one level, so a tool
/// body stays a plain object schema.
#[derive(Debug)]
pub struct SchemaConverter<'a> {
    doc: &'a Document,
    cycles: &'a Cycles,
    mode: SchemaMode,
    limits: Limits,
    /// Schema nodes produced so far (all `convert` calls and defs).
    nodes: usize,
    /// Target pointers being inlined on the current branch.
    branch: Vec<String>,
    /// Targets found to recurse during conversion (beyond `cycles`).
    dynamic: HashSet<String>,
    /// `$defs` name of each target pointer given one.
    def_names: HashMap<String, String>,
    /// Names in use.
    used_names: HashSet<String>,
    /// Defs named but not yet converted: (pointer, name, target).
    pending: VecDeque<(String, String, &'a Value)>,
    /// Converted defs.
    defs: Map<String, Value>,
    /// Nodes before further references stay unexpanded.
    budget: usize,
    /// The next node converted is an `allOf` member of a kept object (see
    /// [`SchemaConverter::keeps`]).
    keep_next: bool,
    /// Output def bodies shared with the other converters of a catalogue.
    memo: Option<&'a DefMemo>,
    /// The def references made while a def body converts (to record it).
    recording: Option<Vec<(String, String)>>,
    /// The `$defs` entries taken from the memo (placeholders in `defs`), by name.
    memo_bodies: Vec<(String, MemoBody)>,
}

/// Output `$defs` bodies as converted, shared by the converters of one
/// catalogue (Stripe's response schemas each hold dozens of the same
/// recursive components). A body depends on its converter only through the
/// node budget, the recursion found beyond [`Cycles`] and the names of the
/// defs it refers to, so one is reused only when all of them give what they
/// gave the first time (see [`SchemaConverter::convert_def`]): the result is
/// exactly what converting it again would give.
#[derive(Debug, Default)]
pub struct DefMemo {
    bodies: Mutex<Bodies>,
    /// Pairs of subschemas of its bodies found equal (see [`EqualPairs`]).
    equal: Arc<EqualPairs>,
}

/// Recorded bodies by target pointer, converted with the budget spent or
/// not, and the number of bodies recorded (each one's id).
#[derive(Debug, Default)]
struct Bodies {
    maps: [rustc_hash::FxHashMap<String, Arc<Recorded>>; 2],
    count: u64,
}

/// One converted def body and what converting it did to its converter.
#[derive(Debug)]
struct Recorded {
    def: Value,
    /// Nodes it counted.
    nodes: usize,
    /// The defs it referred to, in order: target pointer and `$defs` name.
    refs: Vec<(String, String)>,
    /// What sharing finds in it (made by the first schema shared with it).
    scan: OnceLock<BodyScan>,
    /// The `$defs` references written in it (see [`written_refs`]).
    refs_written: OnceLock<Vec<(String, bool)>>,
    /// Its number in its memo.
    id: u64,
}

/// A `$defs` body the [`DefMemo`] holds, taken by a converter, so that what
/// [`share_repeated_with`](super::share_repeated_with) learns by walking
/// it is learnt once per catalogue, not once per schema holding a copy.
#[derive(Debug, Clone)]
pub struct MemoBody {
    recorded: Arc<Recorded>,
    /// The equal pairs known in its memo.
    equal: Arc<EqualPairs>,
}

impl MemoBody {
    /// The body's scan for sharing.
    pub(super) fn scan(&self) -> &BodyScan {
        let recorded = &self.recorded;
        recorded.scan.get_or_init(|| BodyScan::of(&recorded.def))
    }

    /// The body as the memo holds it.
    pub(crate) fn body(&self) -> &Value {
        &self.recorded.def
    }

    /// The body as a declaration's view reads it in place of its
    /// placeholder `name`.
    pub(crate) fn def_body<'s>(&'s self, name: &'s str) -> DefBody<'s> {
        let recorded = &self.recorded;
        DefBody {
            name,
            body: &recorded.def,
            refs: Some(
                recorded
                    .refs_written
                    .get_or_init(|| written_refs(&recorded.def)),
            ),
        }
    }

    /// The body's number in its memo.
    pub(crate) fn id(&self) -> u64 {
        self.recorded.id
    }

    /// The equal pairs known in its memo.
    pub(super) fn equal_pairs(&self) -> &EqualPairs {
        &self.equal
    }
}

impl DefMemo {
    /// The body recorded for `pointer`, converted with the budget spent or not.
    fn get(&self, pointer: &str, spent: bool) -> Option<Arc<Recorded>> {
        let bodies = self.bodies.lock().unwrap_or_else(PoisonError::into_inner);
        bodies.maps[usize::from(spent)].get(pointer).cloned()
    }

    /// Records `recorded` unless a body is recorded for `pointer` already
    /// (then gives its body back).
    fn put(
        &self,
        pointer: &str,
        spent: bool,
        mut recorded: Recorded,
    ) -> std::result::Result<Arc<Recorded>, Value> {
        let mut bodies = self.bodies.lock().unwrap_or_else(PoisonError::into_inner);
        if bodies.maps[usize::from(spent)].contains_key(pointer) {
            return Err(recorded.def);
        }
        recorded.id = bodies.count;
        bodies.count += 1;
        let kept = Arc::new(recorded);
        bodies.maps[usize::from(spent)].insert(pointer.to_string(), Arc::clone(&kept));
        Ok(kept)
    }

    /// `recorded` as a body a schema holds.
    fn body(&self, recorded: Arc<Recorded>) -> MemoBody {
        MemoBody {
            recorded,
            equal: Arc::clone(&self.equal),
        }
    }

    /// How many bodies it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        let bodies = self.bodies.lock().unwrap_or_else(PoisonError::into_inner);
        bodies.maps.iter().map(|m| m.len()).sum()
    }
}

impl<'a> SchemaConverter<'a> {
    /// A converter for one tool's schemas.
    pub fn new(doc: &'a Document, cycles: &'a Cycles, mode: SchemaMode, limits: Limits) -> Self {
        SchemaConverter {
            doc,
            cycles,
            mode,
            limits,
            nodes: 0,
            branch: Vec::new(),
            dynamic: HashSet::default(),
            def_names: HashMap::default(),
            used_names: HashSet::default(),
            pending: VecDeque::new(),
            defs: Map::new(),
            budget: usize::MAX,
            keep_next: false,
            memo: None,
            recording: None,
            memo_bodies: Vec::new(),
        }
    }

    /// Shares output def bodies through `memo` (see [`DefMemo`]; input
    /// converters ignore it).
    pub fn with_memo(mut self, memo: &'a DefMemo) -> Self {
        self.memo = Some(memo);
        self
    }

    /// Whether a node is kept whole: an input schema's root object and,
    /// through `$ref`s, the `allOf` members it is made of. A flattened body
    /// takes its fields from them, so one left unexpanded would drop
    /// fields from the tool (Microsoft Graph's bodies are `allOf` chains
    /// down to `entity`, whose discriminator mapping makes it look large).
    fn keeps(&mut self, top: bool) -> bool {
        let member = std::mem::take(&mut self.keep_next);
        (top || member) && self.mode == SchemaMode::Input
    }

    /// Marks the next node converted as an `allOf` member of a kept object.
    pub(super) fn keep_next_member(&mut self) {
        self.keep_next = true;
    }

    /// Sets the node budget past which references stay unexpanded (none by
    /// default; the catalogue builder uses [`INPUT_BUDGET`] and
    /// [`OUTPUT_BUDGET`], lowered for specs with many operations).
    pub fn with_budget(mut self, budget: usize) -> Self {
        self.budget = budget;
        self
    }

    /// Converts one OpenAPI 3.0 schema (possibly a `$ref`) found at
    /// `pointer` into JSON Schema 2020-12. `$defs` it needs are kept in the
    /// converter (see [`SchemaConverter::into_defs`]).
    ///
    /// # Errors
    /// [`GenerateError::TooDeep`] / [`GenerateError::TooLarge`] past the
    /// [`Limits`], [`GenerateError::Invalid`] for a malformed schema, and
    /// the reference errors of [`resolve_ref`].
    pub fn convert(&mut self, schema: &Value, pointer: &str) -> Result<Value> {
        let out = self.convert_node(schema, pointer, 0, true);
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                self.branch.clear();
                return Err(e);
            }
        };
        while let Some((target_pointer, name, target)) = self.pending.pop_front() {
            let (def, memo_body) = self.convert_def(target, &target_pointer)?;
            if let (Some(body), Some(memo)) = (memo_body, self.memo) {
                self.memo_bodies.push((name.clone(), memo.body(body)));
            }
            self.defs.insert(name, def);
        }
        Ok(out)
    }

    /// Converts the body of the def for `target_pointer`, or takes the one
    /// a converter of the same catalogue made when it would come out the
    /// same here: both had the budget spent, or neither reaches it with
    /// the body's nodes added (references are then expanded or elided
    /// alike); no recursion was found beyond [`Cycles`] (a target found
    /// recursive is referred to instead of inlined); and every def it
    /// refers to gets the name it got there (names are given in order of
    /// first reference, made unique per converter). Also returns the memo
    /// entry the body equals, if any.
    fn convert_def(
        &mut self,
        target: &Value,
        target_pointer: &str,
    ) -> Result<(Value, Option<Arc<Recorded>>)> {
        let memo = self
            .memo
            .filter(|_| self.mode == SchemaMode::Output && self.dynamic.is_empty());
        let spent = self.nodes >= self.budget;
        if let Some(found) = memo.and_then(|m| m.get(target_pointer, spent)) {
            let after = self.nodes.saturating_add(found.nodes);
            // Past the node limit the conversion itself reports where.
            let doc = self.doc;
            let targets: Option<Vec<&Value>> = found
                .refs
                .iter()
                .map(|(pointer, _)| doc.root.pointer(pointer))
                .collect();
            if let Some(targets) = targets
                && (spent || after < self.budget)
                && after <= self.limits.max_nodes
                && self.names_match(&found.refs)
            {
                for ((pointer, _), target) in found.refs.iter().zip(targets) {
                    self.def_ref(pointer.clone(), target);
                }
                self.nodes = after;
                return Ok((Value::Null, Some(found)));
            }
        }
        let before = self.nodes;
        self.recording = memo.map(|_| Vec::new());
        self.branch.clear();
        self.branch.push(target_pointer.to_string());
        let def = self.convert_node(target, target_pointer, 1, false);
        self.branch.clear();
        let refs = self.recording.take();
        let def = def?;
        if let (Some(memo), Some(refs)) = (memo, refs)
            && self.dynamic.is_empty()
            && (spent || self.nodes < self.budget)
        {
            let recorded = Recorded {
                def,
                nodes: self.nodes - before,
                refs,
                scan: OnceLock::new(),
                refs_written: OnceLock::new(),
                id: 0,
            };
            return Ok(match memo.put(target_pointer, spent, recorded) {
                Ok(kept) => (Value::Null, Some(kept)),
                Err(def) => (def, None),
            });
        }
        Ok((def, None))
    }

    /// Whether referring to `refs` in order here gives each the recorded
    /// name (a dry run of [`SchemaConverter::def_ref`]'s naming).
    fn names_match(&self, refs: &[(String, String)]) -> bool {
        let mut named: HashMap<&str, String> = HashMap::default();
        let mut taken: HashSet<String> = HashSet::default();
        refs.iter().all(|(pointer, recorded)| {
            let name = match self.def_names.get(pointer).or(named.get(pointer.as_str())) {
                Some(name) => name.clone(),
                None => {
                    let name = self.unused_name(pointer, &taken);
                    taken.insert(name.clone());
                    named.insert(pointer, name.clone());
                    name
                }
            };
            name == *recorded
        })
    }

    /// The `$defs` collected by all conversions, sorted by name (empty when
    /// nothing recursive was met).
    pub fn into_defs(self) -> Map<String, Value> {
        let (mut defs, bodies) = self.into_defs_and_memo_bodies();
        super::share::fill_defs(&mut defs, &bodies);
        defs
    }

    /// [`SchemaConverter::into_defs`] with the bodies taken from the memo
    /// left as `null` placeholders, and those bodies by name (see
    /// [`MemoBody`]; [`share_repeated_with`](super::share_repeated_with)
    /// and [`fill_memo_bodies`](super::fill_memo_bodies) put them in).
    pub fn into_defs_and_memo_bodies(self) -> (Map<String, Value>, Vec<(String, MemoBody)>) {
        let mut entries: Vec<(String, Value)> = self.defs.into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        (entries.into_iter().collect(), self.memo_bodies)
    }

    /// The mode this converter was made for.
    pub(super) fn mode(&self) -> SchemaMode {
        self.mode
    }

    /// The document being converted.
    pub(super) fn doc(&self) -> &'a Document {
        self.doc
    }

    /// Counts `n` more output nodes, failing past the size limit.
    pub(super) fn count(&mut self, n: usize, pointer: &str) -> Result<()> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.limits.max_nodes {
            return Err(GenerateError::TooLarge {
                file: self.doc.file.clone(),
                pointer: pointer.to_string(),
                limit: self.limits.max_nodes,
            });
        }
        Ok(())
    }

    /// Converts one schema node at `depth`. `top` inlines a `$ref` to a
    /// recursive schema one level instead of pointing into `$defs`.
    pub(super) fn convert_node(
        &mut self,
        schema: &Value,
        pointer: &str,
        depth: usize,
        top: bool,
    ) -> Result<Value> {
        let keep = self.keeps(top);
        if depth > self.limits.max_depth {
            return Err(GenerateError::TooDeep {
                file: self.doc.file.clone(),
                pointer: pointer.to_string(),
                limit: self.limits.max_depth,
            });
        }
        self.count(1, pointer)?;
        match schema {
            Value::Bool(_) => Ok(schema.clone()),
            Value::Object(map) if small_map::has(map, "$ref") => {
                self.convert_ref(map, pointer, depth, top, keep)
            }
            Value::Object(map) => keywords::convert_object(self, map, pointer, depth, keep),
            other => Err(invalid(
                &self.doc.file,
                pointer,
                &format!(
                    "a schema must be an object or a boolean, found {}",
                    kind_name(other)
                ),
            )),
        }
    }

    fn convert_ref(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        depth: usize,
        top: bool,
        keep: bool,
    ) -> Result<Value> {
        let Some(reference) = small_map::get(map, "$ref").and_then(Value::as_str) else {
            return Err(invalid(
                &self.doc.file,
                &push_pointer(pointer, "$ref"),
                "`$ref` must be a string",
            ));
        };
        let doc = self.doc;
        let (target, target_pointer) = resolve_ref(doc, reference, pointer)?;
        if small_map::member(target, "$ref").is_some() {
            // A pure `$ref` → `$ref` loop describes nothing: refuse it.
            deref(doc, target, &target_pointer)?;
        }
        if !top && !keep && self.elide(&target_pointer) {
            let mut out = elided(&target_pointer, target);
            keywords::apply_ref_siblings(self, map, &mut out, pointer)?;
            return Ok(out);
        }
        let recursive =
            self.cycles.is_recursive(&target_pointer) || self.dynamic.contains(&target_pointer);
        let on_branch = self.branch.contains(&target_pointer);
        let mut out = if on_branch || (recursive && !top) {
            if !recursive {
                self.dynamic.insert(target_pointer.clone());
            }
            self.def_ref(target_pointer, target)
        } else {
            self.branch.push(target_pointer.clone());
            self.keep_next = keep;
            let out = self.convert_node(target, &target_pointer, depth + 1, top);
            self.branch.pop();
            out?
        };
        keywords::apply_ref_siblings(self, map, &mut out, pointer)?;
        Ok(out)
    }

    /// Whether a (non-top) reference is left unexpanded: the schema
    /// already holds its budget of nodes, or the target alone would add
    /// more. DAG-shaped specs (Microsoft Graph, Stripe) would otherwise
    /// inline megabytes per tool. An unexpanded part is a described
    /// placeholder that accepts any value of the target's type, so output
    /// schemas stay sound and inputs stay sendable (the API validates the
    /// rest). Deterministic: conversion order is fixed.
    fn elide(&self, target_pointer: &str) -> bool {
        self.nodes >= self.budget
            || (!self.cycles.is_recursive(target_pointer)
                && self
                    .cycles
                    .expanded_size(target_pointer)
                    .is_some_and(|n| n > self.budget))
    }

    /// `{"$ref": "#/$defs/<name>"}`, queueing the def on first use.
    fn def_ref(&mut self, target_pointer: String, target: &'a Value) -> Value {
        let name = match self.def_names.get(&target_pointer) {
            Some(name) => name.clone(),
            None => {
                let name = self.unused_name(&target_pointer, &HashSet::default());
                self.used_names.insert(name.clone());
                self.def_names.insert(target_pointer.clone(), name.clone());
                self.pending
                    .push_back((target_pointer.clone(), name.clone(), target));
                name
            }
        };
        if let Some(refs) = self.recording.as_mut() {
            refs.push((target_pointer, name.clone()));
        }
        json!({ "$ref": format!("#/$defs/{name}") })
    }

    /// A `[A-Za-z0-9_.-]` name for a target pointer that neither this
    /// converter nor `taken` uses.
    fn unused_name(&self, target_pointer: &str, taken: &HashSet<String>) -> String {
        let base = def_base_name(target_pointer);
        let mut name = base.clone();
        let mut n = 2;
        while self.used_names.contains(&name) || taken.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    }
}

/// Nodes an output schema grows to before further references stay
/// unexpanded (the catalogue builder lowers it for specs with many
/// operations).
pub const OUTPUT_BUDGET: usize = 4_000;
/// The same for input schemas (one tool's parameters and body together).
pub const INPUT_BUDGET: usize = 16_000;

/// The stand-in for an unexpanded output part: any value, described.
fn elided(target_pointer: &str, target: &Value) -> Value {
    let name = def_base_name(target_pointer);
    let mut out = Map::new();
    if let Some(Value::String(t)) = target.get("type")
        && matches!(t.as_str(), "object" | "array" | "string")
        && target.get("nullable") != Some(&Value::Bool(true))
    {
        // A one-word type is kept: it still accepts every real value.
        out.insert("type".into(), Value::String(t.clone()));
    }
    let description = match target.get("description").and_then(Value::as_str) {
        Some(d) if !d.trim().is_empty() => {
            format!("{} (schema `{name}`, not expanded here)", d.trim())
        }
        _ => format!("Schema `{name}` (not expanded here)."),
    };
    out.insert("description".into(), Value::String(description));
    Value::Object(out)
}

/// The component name for `/components/schemas/<Name>`, else the pointer;
/// sanitised to `[A-Za-z0-9_.-]`.
fn def_base_name(target_pointer: &str) -> String {
    let raw = match target_pointer.strip_prefix("/components/schemas/") {
        Some(name) if !name.contains('/') => name.replace("~1", "/").replace("~0", "~"),
        _ => target_pointer.trim_start_matches('/').replace('/', "."),
    };
    let name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "schema".to_string()
    } else {
        name
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "memo_tests.rs"]
mod memo_tests;
