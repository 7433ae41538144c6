//! Builds the IR from a loaded document: walks every operation, applies the
//! policy and turns parameters, bodies and responses into tool data.

mod body;
mod params;
mod responses;

use serde_json::{Map, Value, json};

use crate::config::{ForgeConfig, InvalidOperation};
use crate::error::{GenerateError, Result, push_pointer};
use crate::ir::{Annotations, Catalogue, HttpMethod, Product, Route, Skipped, Tool};
use crate::load::Document;
use crate::naming::{NameRequest, assign_unique};
use crate::policy::{OpRef, Policy};
use crate::refs::deref;
use crate::schema::{Cycles, Limits, SchemaConverter, SchemaMode};

/// Shared state while building one catalogue.
pub(crate) struct Ctx<'a> {
    pub doc: &'a Document,
    pub cycles: &'a Cycles,
    pub policy: Policy,
    pub limits: Limits,
}

impl<'a> Ctx<'a> {
    pub fn converter(&self, mode: SchemaMode) -> SchemaConverter<'a> {
        SchemaConverter::new(self.doc, self.cycles, mode, self.limits)
    }

    pub fn invalid(&self, pointer: &str, message: impl Into<String>) -> GenerateError {
        GenerateError::Invalid {
            file: self.doc.file.clone(),
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }
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
    let cycles = Cycles::compute(doc);
    let ctx = Ctx {
        doc,
        cycles: &cycles,
        policy: Policy::new(config.policy),
        limits: Limits {
            max_depth: config.options.max_schema_depth,
            max_nodes: config.options.max_schema_nodes,
        },
    };
    let mut tools: Vec<(Tool, Vec<String>, String)> = Vec::new();
    let mut skipped: Vec<Skipped> = Vec::new();
    let paths = match doc.root.get("paths") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p.clone(),
        Some(_) => return Err(ctx.invalid("/paths", "`paths` must be an object")),
    };
    for (path, item) in &paths {
        let item_ptr = push_pointer("/paths", path);
        let (item, item_ptr) = deref(doc, item, &item_ptr)?;
        let Some(item_obj) = item.as_object() else {
            return Err(ctx.invalid(&item_ptr, "path item must be an object"));
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
            let operation_id = op_ref.operation_id().unwrap_or_default().to_string();
            let outcome = if op.is_object() {
                build_tool(&ctx, op_ref, item, &op_ptr)
            } else {
                Err(ctx.invalid(&op_ptr, "operation must be an object"))
            };
            match outcome {
                Ok(Built::Tool(tool, candidates)) => tools.push((*tool, candidates, op_ref.key())),
                Ok(Built::Skipped(Skip(reason))) => skipped.push(Skipped {
                    path: path.clone(),
                    method,
                    operation_id,
                    reason,
                }),
                Err(e) if config.options.on_invalid_operation == InvalidOperation::Skip => skipped
                    .push(Skipped {
                        path: path.clone(),
                        method,
                        operation_id,
                        reason: format!("invalid operation: {e}"),
                    }),
                Err(e) => return Err(e),
            }
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
        tool.name = name;
        products.entry(tool.product.clone()).or_default().push(tool);
    }
    let products = products
        .into_iter()
        .map(|(name, mut tools)| {
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            Product { name, tools }
        })
        .collect();
    skipped.sort();
    Ok(Catalogue {
        api: config.api.clone(),
        products,
        skipped,
    })
}

fn text(op: &Value, key: &str) -> String {
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

fn build_tool(ctx: &Ctx<'_>, op: OpRef<'_>, path_item: &Value, op_ptr: &str) -> Result<Built> {
    let merged = ctx.policy.merged_path(op.path);
    let mut input = SchemaConverter::new(ctx.doc, ctx.cycles, SchemaMode::Input, ctx.limits);
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
    let body = match body::collect(ctx, &mut input, &mut args, op.op, op_ptr)? {
        Ok(b) => b,
        Err(skip) => return Ok(Built::Skipped(skip)),
    };
    let routes = params::routes(op.path, &params, merged.as_ref());
    let defs = input.into_defs();
    let mut input_schema = json!({"type": "object", "properties": Value::Object(args.properties)});
    if !args.required.is_empty() {
        input_schema["required"] = json!(args.required);
    }
    input_schema["additionalProperties"] = Value::Bool(false);
    if !defs.is_empty() {
        input_schema["$defs"] = Value::Object(defs);
    }
    let (responses, success) = responses::collect(ctx, op.op, op_ptr)?;
    let (envelope, output_schema) = ctx.policy.output(success.as_ref());
    let title = text(op.op, "summary");
    let mut description = text(op.op, "description");
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
    };
    Ok(Built::Tool(Box::new(tool), candidates))
}

/// The routes of a tool whose path is not merged.
pub(crate) fn single_route(template: String) -> Vec<Route> {
    vec![Route {
        when: None,
        template,
    }]
}
