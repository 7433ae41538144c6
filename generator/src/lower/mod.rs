//! Builds the IR from a loaded document: walks every operation, applies the
//! policy and turns parameters, bodies and responses into tool data.

mod body;
mod params;
mod responses;
mod success;
pub(crate) mod text;

use rustc_hash::FxHashMap as HashMap;
use std::hash::Hasher;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use serde_json::{Map, Value, json};

use crate::config::{ForgeConfig, InvalidOperation, SchemaProfile};
use crate::error::{GenerateError, Result, push_pointer};
use crate::ir::{
    Annotations, Catalogue, Envelope, HttpMethod, OutputSchema, Product, Route, SchemaText,
    Skipped, Tool,
};
use crate::load::Document;
use crate::naming::{NameRequest, assign_unique};
use crate::policy::{OpRef, Policy};
use crate::refs::deref;
use crate::schema::strict::strict_input_schema;
use crate::schema::{
    BodyCopies, MemoBody, Placed, fill_memo_bodies, kept_defs, nesting, nesting_placed,
    place_memo_bodies, share_repeated, share_repeated_input, share_repeated_placed,
};
use crate::schema::{
    Cycles, DefMemo, INPUT_BUDGET, Limits, OUTPUT_BUDGET, SchemaConverter, SchemaMode, trim_input,
};

/// Shared state while building one catalogue.
pub(crate) struct LowerCtx<'a> {
    pub doc: &'a Document,
    pub cycles: &'a Cycles,
    pub policy: Policy,
    pub limits: Limits,
    pub profile: SchemaProfile,
    /// Whether repeated subschemas move into `$defs` (full profile).
    pub share_subschemas: bool,
    /// Node budget of each output/response schema.
    pub output_budget: usize,
    /// Node budget of each input schema.
    pub input_budget: usize,
    /// Response schema texts seen so far (equal texts share one
    /// allocation), by a hash of their text taken outside the lock.
    pub texts: Mutex<HashMap<u64, Vec<Arc<str>>>>,
    /// Converted response schemas by source JSON text (conversion is a
    /// function of the source node: equal sources, equal results): the
    /// text, and for success schemas the output they give.
    pub memo: Mutex<HashMap<Arc<str>, Memoised>>,
    /// Output def bodies shared by all conversions.
    pub def_memo: DefMemo,
    /// Those bodies as shared schemas hold them.
    pub body_copies: BodyCopies,
}

/// A memoised response schema: its text and, for a success schema, the
/// output it gives.
pub(crate) type Memoised = (SchemaText, Option<Arc<Output>>);

/// An output schema made: the definitions its declaration names, its
/// interned (shared) text and its nesting.
pub(crate) type Shared = (Vec<(String, bool)>, SchemaText, usize);

/// What a tool's success schema gives it.
#[derive(Debug)]
pub(crate) struct Output {
    /// How the success body is unwrapped.
    pub envelope: Envelope,
    /// The output schema (text and declared definitions; see [`OutputSchema`]).
    pub schema: Option<Arc<OutputSchema>>,
    /// Arrays and objects nested in the schema (see [`TOOL_SCHEMA_MAX_NESTING`]).
    pub nesting: usize,
}

impl<'a> LowerCtx<'a> {
    pub fn converter(&self, mode: SchemaMode) -> SchemaConverter<'_> {
        let budget = match mode {
            SchemaMode::Input => self.input_budget,
            SchemaMode::Output => self.output_budget,
        };
        SchemaConverter::new(self.doc, self.cycles, mode, self.limits)
            .with_budget(budget)
            .with_memo(&self.def_memo)
    }

    /// Compact JSON text of a converted schema, shared with equal texts.
    pub fn intern(&self, schema: &Value) -> Result<SchemaText> {
        self.intern_placed(schema, &Placed::new())
    }

    /// [`LowerCtx::intern`] of a schema holding `placed` bodies (see
    /// [`LowerCtx::share_with`]).
    pub fn intern_placed(&self, schema: &Value, placed: &Placed) -> Result<SchemaText> {
        let placed: Vec<(&str, &str)> = placed
            .iter()
            .map(|(name, copy)| (name.as_str(), &*copy.text))
            .collect();
        thread_local! {
            // Texts run to hundreds of kilobytes: written into a buffer kept
            // per thread, then copied once into a block of their exact size,
            // instead of a String grown by doubling for every schema.
            static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let text: Arc<str> = BUFFER.with_borrow_mut(|buffer| {
            buffer.clear();
            crate::json_text::write_placed(buffer, schema, &placed);
            // Only whole UTF-8 strings and ASCII are written.
            std::str::from_utf8(buffer).map(Arc::from).map_err(|e| {
                GenerateError::emit_from(
                    self.doc.file.clone(),
                    "an interned schema text is not UTF-8",
                    e,
                )
            })
        })?;
        // Hashed once, before the lock: a text of Stripe's runs to
        // hundreds of kilobytes, and a set of texts would hash it again to
        // insert it and rehash every text it holds when it grows.
        let mut hasher = rustc_hash::FxHasher::default();
        hasher.write(text.as_bytes());
        let hash = hasher.finish();
        let mut texts = self
            .texts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let same_hash = texts.entry(hash).or_default();
        if let Some(shared) = same_hash.iter().find(|t| t.as_ref() == text.as_ref()) {
            return Ok(SchemaText(Arc::clone(shared)));
        }
        same_hash.push(Arc::clone(&text));
        Ok(SchemaText(text))
    }

    /// The memoised conversion of response schema source text `key`: its
    /// text, and what it gives as a success schema when `success` (`None`
    /// when that is needed and was not computed).
    pub fn memo_get(&self, key: &str, success: bool) -> Option<Memoised> {
        let memo = self
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (text, output) = memo.get(key)?;
        if success && output.is_none() {
            return None;
        }
        Some((text.clone(), output.clone()))
    }

    /// Remembers the conversion of response schema source text `key`, and
    /// returns the memoised one: another thread may have made it first,
    /// and tools with equal sources then still share one allocation.
    pub fn memo_put(
        &self,
        key: Arc<str>,
        text: SchemaText,
        output: Option<Arc<Output>>,
    ) -> Memoised {
        let mut memo = self
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = memo.entry(key).or_insert_with(|| (text, None));
        if entry.1.is_none() {
            entry.1 = output;
        }
        entry.clone()
    }

    /// Moves repeated subschemas of `schema` into its `$defs` (full
    /// profile, when the options ask for it).
    pub fn share(&self, schema: &mut Value) {
        if self.shares() {
            share_repeated(schema);
        }
    }

    /// Whether repeated subschemas of output schemas are shared.
    fn shares(&self) -> bool {
        self.profile != SchemaProfile::Strict && self.share_subschemas
    }

    /// [`LowerCtx::share`] of a schema whose root `$defs` entries named in
    /// `bodies` are placeholders for those memo bodies (see
    /// [`share_repeated_placed`]): the placeholders stay, and the copy of
    /// each body the schema holds (shared or not) is returned, to be
    /// written with it by [`LowerCtx::intern_placed`].
    pub fn share_with(&self, schema: &mut Value, bodies: &[(String, MemoBody)]) -> Placed {
        if self.shares() {
            share_repeated_placed(schema, bodies, &self.body_copies)
        } else {
            place_memo_bodies(schema, bodies, &self.body_copies)
        }
    }

    /// The output schema (and envelope) a converted success schema gives
    /// (or its absence): the policy's unwrapping, then sharing of repeated
    /// subschemas. The definitions its declaration names are found before
    /// sharing: they are then the spec's recursive definitions, the same
    /// in every tool.
    pub fn output(&self, success: Option<Value>) -> Result<Output> {
        let (envelope, schema) = success::policy_output(&*self.policy, success);
        let shared = schema
            .map(|output| self.declared_and_shared(output))
            .transpose()?;
        Ok(Self::shared_output(envelope, shared))
    }

    /// An output schema's declared definitions (found before sharing), its
    /// interned shared text and its nesting.
    fn declared_and_shared(&self, mut output: Value) -> Result<Shared> {
        let declared = kept_defs(&output, &[]);
        self.share(&mut output);
        let text = self.intern(&output)?;
        Ok((declared, text, nesting(&output)))
    }

    /// [`LowerCtx::output`] of a converted success schema whose root `$defs`
    /// hold placeholders for `bodies` (see [`LowerCtx::share_with`]): a policy
    /// reads and moves the root only, so the bodies are neither copied in
    /// before it nor walked again after it (Stripe unwraps ~100 outputs
    /// holding ~1,000 bodies). An output that no longer holds each
    /// placeholder in its root `$defs` is made as before, bodies filled in.
    pub fn output_placed(&self, success: Value, bodies: &[(String, MemoBody)]) -> Result<Output> {
        let (envelope, schema) = success::policy_output(&*self.policy, Some(success));
        let shared = match schema {
            Some(mut output) if holds_placeholders(&output, bodies) => {
                let declared = kept_defs(&output, bodies);
                let placed = self.share_with(&mut output, bodies);
                let text = self.intern_placed(&output, &placed)?;
                Some((declared, text, nesting_placed(&output, &placed)))
            }
            Some(mut output) => {
                fill_memo_bodies(&mut output, bodies);
                Some(self.declared_and_shared(output)?)
            }
            None => None,
        };
        Ok(Self::shared_output(envelope, shared))
    }

    /// The output of a schema with its declared definitions, its interned
    /// (shared) text and its nesting.
    pub fn shared_output(envelope: Envelope, shared: Option<Shared>) -> Output {
        let nesting = shared.as_ref().map_or(0, |(_, _, nesting)| *nesting);
        let schema = shared.map(|(declared_defs, text, _)| {
            Arc::new(OutputSchema {
                text,
                declared_defs,
            })
        });
        Output {
            envelope,
            schema,
            nesting,
        }
    }

    pub fn invalid(&self, pointer: &str, message: impl Into<String>) -> GenerateError {
        GenerateError::Invalid {
            file: self.doc.file.clone(),
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }
}

/// Whether `schema`'s root `$defs` holds a `null` placeholder for each of
/// `bodies`.
fn holds_placeholders(schema: &Value, bodies: &[(String, MemoBody)]) -> bool {
    let defs = schema.get("$defs").and_then(Value::as_object);
    bodies
        .iter()
        .all(|(name, _)| defs.is_some_and(|d| d.get(name).is_some_and(Value::is_null)))
}

/// Why an operation got no tool (not an error: listed in the README).
pub(crate) struct Skip(pub String);

/// Outcome of building one operation.
pub(crate) enum Built {
    Tool(Box<Tool>, Vec<String>),
    Skipped(Skip),
}

/// Builds the catalogue of `doc` under the config's policy.
pub fn build_catalogue(doc: &Document, config: &ForgeConfig) -> Result<Catalogue> {
    build_catalogue_with(doc, config, &Cycles::compute(doc))
}

/// Output-schema nodes shared by all operations of a spec.
const OUTPUT_NODES_TOTAL: usize = 4_000_000;
/// Input-schema nodes shared by all operations of a spec.
const INPUT_NODES_TOTAL: usize = 16_000_000;

/// Each schema's node budget: `max`, lowered so all of a spec's schemas
/// of one kind together stay near `total` (Microsoft Graph has 22,000
/// operations over one schema graph), never below `min`.
fn budget(ops: usize, total: usize, min: usize, max: usize) -> usize {
    (total / ops.max(1)).clamp(min, max)
}

/// One operation to build, or a path item that is unreadable.
enum Job<'a> {
    Op { op_ref: OpRef<'a>, op_ptr: String },
    BadItem(GenerateError),
}

/// [`build_catalogue`] with the document's [`Cycles`] already computed.
/// Operations are built in parallel; the result (and which error wins)
/// is that of building them one by one in document order.
pub fn build_catalogue_with(
    doc: &Document,
    config: &ForgeConfig,
    cycles: &Cycles,
) -> Result<Catalogue> {
    build_catalogue_keeping(doc, config, cycles).map(|(catalogue, _)| catalogue)
}

/// The caches the operations of one catalogue shared (texts, converted
/// responses, def bodies and their copies), given back to be
/// freed where it costs no one a wait: Stripe's take ~2.5 ms to free.
pub(crate) type Caches = (
    Mutex<HashMap<u64, Vec<Arc<str>>>>,
    Mutex<HashMap<Arc<str>, Memoised>>,
    DefMemo,
    BodyCopies,
);

/// [`build_catalogue_with`], giving back the caches it made as well.
pub(crate) fn build_catalogue_keeping(
    doc: &Document,
    config: &ForgeConfig,
    cycles: &Cycles,
) -> Result<(Catalogue, Caches)> {
    let ctx = LowerCtx {
        doc,
        cycles,
        policy: Policy::new(config.policy),
        limits: Limits {
            max_depth: config.options.max_schema_depth,
            max_nodes: config.options.max_schema_nodes,
        },
        profile: config.options.schema_profile,
        share_subschemas: config.options.share_subschemas,
        output_budget: OUTPUT_BUDGET,
        input_budget: INPUT_BUDGET,
        texts: Mutex::new(HashMap::default()),
        memo: Mutex::new(HashMap::default()),
        def_memo: DefMemo::default(),
        body_copies: BodyCopies::default(),
    };
    let mut tools: Vec<(Tool, Vec<String>, String)> = Vec::new();
    let mut skipped: Vec<Skipped> = Vec::new();
    let empty = Map::new();
    let paths = match doc.root.get("paths") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(p)) => p,
        Some(_) => return Err(ctx.invalid("/paths", "`paths` must be an object")),
    };
    let mut jobs: Vec<Job<'_>> = Vec::new();
    for (path, item) in paths {
        if path.starts_with("x-") {
            // A specification extension of the Paths object, not a path.
            continue;
        }
        let item_ptr = push_pointer("/paths", path);
        let (item, item_ptr) = match deref(doc, item, &item_ptr) {
            Ok(found) => found,
            Err(e) => {
                jobs.push(Job::BadItem(e));
                break;
            }
        };
        let Some(item_obj) = item.as_object() else {
            jobs.push(Job::BadItem(
                ctx.invalid(&item_ptr, "path item must be an object"),
            ));
            break;
        };
        for method in HttpMethod::ALL {
            let Some(op) = item_obj.get(method.key()) else {
                continue;
            };
            let op_ptr = push_pointer(&item_ptr, method.key());
            let op_ref = OpRef {
                path,
                method,
                op,
                path_item: item,
            };
            jobs.push(Job::Op { op_ref, op_ptr });
        }
    }
    let mut security = crate::security::Resolver::new(doc, ctx.policy);
    let ops = jobs.iter().filter(|j| matches!(j, Job::Op { .. })).count();
    let ctx = LowerCtx {
        output_budget: budget(ops, OUTPUT_NODES_TOTAL, 200, OUTPUT_BUDGET),
        input_budget: budget(ops, INPUT_NODES_TOTAL, 1_000, INPUT_BUDGET),
        ..ctx
    };
    let outcomes: Vec<Result<Built>> = jobs
        .par_iter()
        // One operation per task: rayon's adaptive split otherwise leaves
        // a run of operations on one thread at the end, the others idle.
        .with_max_len(1)
        .map(|job| match job {
            Job::Op { op_ref, op_ptr } if op_ref.op.is_object() => {
                build_tool(&ctx, *op_ref, op_ref.path_item, op_ptr)
            }
            Job::Op { op_ptr, .. } => Err(ctx.invalid(op_ptr, "operation must be an object")),
            Job::BadItem(_) => Ok(Built::Skipped(Skip(String::new()))),
        })
        .collect();
    for (job, outcome) in jobs.into_iter().zip(outcomes) {
        let (op_ref, op_ptr) = match job {
            Job::Op { op_ref, op_ptr } => (op_ref, op_ptr),
            Job::BadItem(e) => return Err(e),
        };
        let (path, method) = (op_ref.path, op_ref.method);
        let operation_id = op_ref.operation_id().unwrap_or_default().to_string();
        match outcome {
            Ok(Built::Tool(mut tool, candidates)) => {
                tool.security = security.resolve(op_ref.op, &op_ptr);
                security.record_scopes(&tool.operation_id, op_ref.op);
                tools.push((*tool, candidates, op_ref.key()));
            }
            Ok(Built::Skipped(Skip(reason))) => skipped.push(Skipped {
                path: path.to_string(),
                method,
                operation_id,
                reason,
            }),
            Err(e) if config.options.on_invalid_operation == InvalidOperation::Skip => skipped
                .push(Skipped {
                    path: path.to_string(),
                    method,
                    operation_id,
                    reason: format!("invalid operation: {e}"),
                }),
            Err(e) => return Err(e),
        }
    }
    let requests: Vec<NameRequest> = tools
        .iter()
        .map(|(_, candidates, key)| NameRequest {
            key: key.clone(),
            candidates: candidates.clone(),
        })
        .collect();
    let names = assign_unique(&requests, &config.options.name_lock);
    let mut products: std::collections::BTreeMap<String, Vec<Tool>> = Default::default();
    for ((mut tool, _, _), name) in tools.into_iter().zip(names) {
        if tool.title.is_empty() {
            tool.title = text::title_of_name(&name);
        }
        tool.name = name;
        products.entry(tool.product.clone()).or_default().push(tool);
    }
    let products: Vec<Product> = products
        .into_iter()
        .map(|(name, mut tools)| {
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            Product { name, tools }
        })
        .collect();
    skipped.sort();
    let mut profile = ctx.policy.profile(&config.api);
    let table = security.finish(
        &config.api,
        products.iter().flat_map(|p: &Product| p.tools.iter()),
    );
    if let Some(env) = table
        .primary
        .and_then(|p| table.schemes.get(usize::from(p)))
        .and_then(|s| s.env.first())
    {
        profile.token_env = env.clone();
    }
    profile.schemes = table.schemes;
    profile.security = table.global;
    profile.primary = table.primary;
    profile.scopes = table.scopes;
    profile.security_warnings = table.warnings;
    if let Some(envelope) = &config.envelope {
        profile.envelope = envelope.apply(profile.envelope, std::path::Path::new("forge.json"))?;
    }
    profile.pagination = match &config.pagination {
        Some(p) => crate::config::checked_pagination(p, std::path::Path::new("forge.json"))?,
        None => {
            let tools = products.iter().flat_map(|p: &Product| p.tools.iter());
            crate::policy::pagination::infer(tools).0
        }
    };
    // `api.paginate` and the last-item cursor read a list's items: for bare
    // bodies that are objects, the array the list outputs share.
    if profile.envelope.items.is_none()
        && profile.envelope.payload.is_empty()
        && profile.pagination != crate::ir::Pagination::None
    {
        let tools = products.iter().flat_map(|p: &Product| p.tools.iter());
        profile.envelope.items = crate::policy::pagination::infer_items(tools, &profile.pagination);
    }
    if let Some(identity) = &config.identity {
        profile.identity = Some(crate::ir::Identity {
            probes: vec![identity.probe(std::path::Path::new("forge.json"))?],
        });
    }
    if let Some(paths) = &config.scoped_paths {
        profile.scoped_paths = crate::config::scoped_paths(paths, &products)?;
    }
    if let Some(groups) = &config.skill_groups {
        profile.skill_groups = crate::config::skill_groups(groups, &products)?;
    }
    let server = crate::servers::default_server(doc, config.spec.url.as_deref())?;
    if let Some(server) = ctx.policy.default_server(server) {
        profile.base_url = Some(server.url);
        profile.server_vars = server.variables;
    }
    let caches = (ctx.texts, ctx.memo, ctx.def_memo, ctx.body_copies);
    let catalogue = Catalogue {
        api: config.api.clone(),
        profile,
        products,
        skipped,
    };
    Ok((catalogue, caches))
}

fn op_text(op: &Value, key: &str) -> String {
    op.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn annotations(method: HttpMethod) -> Annotations {
    let safe = method.is_safe();
    Annotations {
        read_only_hint: safe,
        destructive_hint: matches!(
            method,
            HttpMethod::Delete | HttpMethod::Put | HttpMethod::Patch
        ),
        idempotent_hint: safe || matches!(method, HttpMethod::Put | HttpMethod::Delete),
        open_world_hint: true,
    }
}

fn build_tool(ctx: &LowerCtx<'_>, op: OpRef<'_>, path_item: &Value, op_ptr: &str) -> Result<Built> {
    let merged = ctx.policy.merged_path(op.path);
    let mut input = ctx.converter(SchemaMode::Input);
    let mut args = params::Args::default();
    let params = match params::collect(
        ctx,
        &mut input,
        &mut args,
        op,
        path_item,
        op_ptr,
        merged.as_ref(),
    )? {
        Ok(p) => p,
        Err(skip) => return Ok(Built::Skipped(skip)),
    };
    let body = match body::collect(ctx, &mut input, &mut args, op.op, op_ptr, op.method)? {
        Ok(b) => b,
        Err(skip) => return Ok(Built::Skipped(skip)),
    };
    let routes = params::routes(op.path, &params, merged.as_ref());
    let defs = input.into_defs();
    // Built by hand: `json!` would re-serialise the properties (a deep copy).
    let mut input_schema = Value::Object(Map::from_iter([
        ("type".to_string(), Value::String("object".into())),
        ("properties".to_string(), Value::Object(args.properties)),
    ]));
    if !args.required.is_empty() {
        input_schema["required"] = json!(args.required);
    }
    input_schema["additionalProperties"] = Value::Bool(false);
    if !defs.is_empty() {
        input_schema["$defs"] = Value::Object(defs);
    }
    let (responses, success) = responses::collect(ctx, op.op, op_ptr)?;
    let output = match success {
        Some(output) => output,
        None => Arc::new(ctx.output(None)?),
    };
    // The unshared setting keeps the schema as converted (the lossless
    // check compares the two). The strict profile starts from the trimmed
    // schema too: the runtime makes it from the full one, and both must
    // agree (test_schema_profiles).
    if ctx.share_subschemas {
        trim_input(&mut input_schema);
    }
    if ctx.profile == SchemaProfile::Strict {
        input_schema = strict_input_schema(&input_schema);
    } else if ctx.share_subschemas {
        share_repeated_input(&mut input_schema);
    }
    if nesting(&input_schema).max(output.nesting) > TOOL_SCHEMA_MAX_NESTING {
        return Err(GenerateError::TooDeep {
            file: ctx.doc.file.clone(),
            pointer: op_ptr.to_string(),
            limit: TOOL_SCHEMA_MAX_NESTING,
        });
    }
    let (envelope, output_schema) = (output.envelope, output.schema.clone());
    let title = op_text(op.op, "summary");
    let mut description = op_text(op.op, "description");
    if let Some(converted) = text::markdown(&description) {
        description = converted;
    }
    if description.is_empty() {
        description = title.clone();
    }
    let deprecated = op
        .op
        .get("deprecated")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if deprecated {
        description = format!("Deprecated: {description}");
    }
    let product = ctx.policy.product(&op);
    let candidates = ctx.policy.name_candidates(&op, &product);
    let tool = Tool {
        name: String::new(),
        operation_id: op
            .operation_id()
            .map(str::to_string)
            .unwrap_or_else(|| op.key()),
        product,
        method: op.method,
        path: op.path.to_string(),
        routes,
        title,
        description,
        params,
        body,
        input_schema,
        output_schema,
        responses,
        annotations: annotations(op.method),
        permissions: ctx.policy.permissions(&op),
        envelope,
        deprecated,
        security: Vec::new(),
        declares_link: crate::policy::pagination::declares_link(ctx.doc, op.op, op_ptr),
    };
    Ok(Built::Tool(Box::new(tool), candidates))
}

/// Most arrays and objects nested in a tool's input or output schema:
/// `artifacts/tools.json` wraps each schema in three more, and serde_json
/// (`toolforge diff` reads the file back) reads at most 127. Data copied
/// into a schema (`default`, `enum`, `examples`) can nest deeper than the
/// schema bound counts, and a `$ref` puts it deeper than it sits in the
/// spec. (Found while fixing the same limit in `artifacts/spec.json`, which
/// the `generate` fuzz target hit.)
pub const TOOL_SCHEMA_MAX_NESTING: usize = 124;

/// The routes of a tool whose path is not merged.
pub(crate) fn single_route(template: String) -> Vec<Route> {
    vec![Route {
        when: None,
        template,
    }]
}
