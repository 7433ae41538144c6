//! The generic policy: products from tags, names from `operationId`.

use serde_json::{Value, json};

use super::OpRef;
use crate::ir::Envelope;
use crate::naming::{fit_tool_name, snake};

/// First tag, else the first literal path segment, else `default`.
pub fn product(op: &OpRef<'_>) -> String {
    let tag = op
        .op
        .get("tags")
        .and_then(Value::as_array)
        .and_then(|t| t.first())
        .and_then(Value::as_str)
        .map(snake)
        .filter(|s| !s.is_empty());
    tag.or_else(|| {
        op.path
            .split('/')
            .find(|s| !s.is_empty() && !s.starts_with('{'))
            .map(snake)
            .filter(|s| !s.is_empty())
    })
    .unwrap_or_else(|| "default".to_string())
}

/// Path words without parameters, for names when there is no operationId.
pub fn path_words(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .map(snake)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `snake(operationId)`; `method_path_words` when absent.
pub fn name_candidates(op: &OpRef<'_>, product: &str) -> Vec<String> {
    let key = op.key();
    let base = match op.operation_id().map(snake).filter(|s| !s.is_empty()) {
        Some(id) => id,
        None => {
            let mut w = vec![op.method.key().to_string()];
            w.extend(path_words(op.path));
            if op.path.trim_end_matches('/').ends_with('}') {
                w.push("by_id".into());
            }
            w.join("_")
        }
    };
    let first = fit_tool_name(&base, &key);
    let mut out = vec![first];
    if !base.starts_with(product) {
        out.push(fit_tool_name(&format!("{product}_{base}"), &key));
    }
    out.push(fit_tool_name(&format!("{base}_{}", op.method.key()), &key));
    out
}

/// Generic specs carry no permission data.
pub fn permissions(_op: &Value) -> Vec<String> {
    Vec::new()
}

/// The success body is the output when it is an object; other shapes are
/// wrapped as `{result}` by the runtime.
pub fn output(success: Option<&Value>) -> (Envelope, Option<Value>) {
    match success {
        Some(schema) if is_object_schema(schema) => (Envelope::None, Some(schema.clone())),
        Some(schema) => (
            Envelope::Wrapped,
            Some(json!({"type": "object", "properties": {"result": schema}})),
        ),
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
