//! Request bodies: media type choice, flattening object bodies into
//! arguments, and file fields for multipart and raw uploads.

use serde_json::{Value, json};

use super::params::Args;
use super::{LowerCtx, Skip};
use crate::error::{Result, push_pointer};
use crate::ir::{Body, BodyArgs, BodyKind, HttpMethod};
use crate::refs::deref;
use crate::schema::{SchemaConverter, object_shape};

/// The schema a file argument accepts: text, or bytes as base64.
pub(crate) fn file_schema(description: Option<&str>) -> Value {
    let mut s = json!({
        "anyOf": [
            {"type": "string", "description": "File content as UTF-8 text."},
            {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "File content; base64 when encoding is base64."},
                    "encoding": {"type": "string", "enum": ["utf8", "base64"], "default": "utf8"},
                    "filename": {"type": "string"},
                    "content_type": {"type": "string"}
                },
                "required": ["content"],
                "additionalProperties": false
            }
        ]
    });
    if let Some(d) = description {
        s["description"] = Value::String(d.to_string());
    }
    s
}

fn kind_of(media: &str) -> BodyKind {
    let m = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if m == "application/json" || m.ends_with("+json") || m == "*/*" || m == "application/*" {
        BodyKind::Json
    } else if m == "multipart/form-data" || m == "multipart/mixed" {
        BodyKind::Multipart
    } else if m == "application/x-www-form-urlencoded" {
        BodyKind::Form
    } else {
        BodyKind::Raw
    }
}

fn rank(kind: BodyKind) -> u8 {
    match kind {
        BodyKind::Json => 0,
        BodyKind::Multipart => 1,
        BodyKind::Form => 2,
        BodyKind::Raw => 3,
    }
}

/// `type: array` whose items are files: one part per item.
fn is_file_array(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("array")
        && schema.get("items").is_some_and(is_file)
}

fn is_file(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("string")
        && matches!(
            schema.get("format").and_then(Value::as_str),
            Some("binary" | "byte")
        )
}

/// A body schema that admits only `{}`: an object with no properties and
/// `additionalProperties: false` (Stripe declares one, as a form, on every
/// GET and DELETE). There is nothing to send in it.
fn is_empty_body(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
        && schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(serde_json::Map::is_empty)
        && schema.get("additionalProperties") == Some(&Value::Bool(false))
        && ["allOf", "anyOf", "oneOf", "patternProperties", "$ref"]
            .iter()
            .all(|k| schema.get(*k).is_none())
}

/// Reads the request body into `args`. An empty body ([`is_empty_body`])
/// on a GET, HEAD or DELETE, where a body has no defined meaning (RFC
/// 9110), gives no argument and no body.
pub(crate) fn collect(
    ctx: &LowerCtx<'_>,
    input: &mut SchemaConverter<'_>,
    args: &mut Args,
    op: &Value,
    op_ptr: &str,
    method: HttpMethod,
) -> Result<std::result::Result<Option<Body>, Skip>> {
    let Some(rb) = op.get("requestBody") else {
        return Ok(Ok(None));
    };
    let (rb, rb_ptr) = deref(ctx.doc, rb, &push_pointer(op_ptr, "requestBody"))?;
    let required = rb.get("required").and_then(Value::as_bool).unwrap_or(false);
    let Some(content) = rb.get("content").and_then(Value::as_object) else {
        return Err(ctx.invalid(&rb_ptr, "requestBody has no `content` object"));
    };
    let Some((media, media_obj)) = content.iter().min_by_key(|(m, _)| rank(kind_of(m))) else {
        return Ok(Ok(None));
    };
    let kind = kind_of(media);
    let content_type = if media.contains('*') {
        "application/json".to_string()
    } else {
        media.clone()
    };
    let schema_ptr = push_pointer(
        &push_pointer(&push_pointer(&rb_ptr, "content"), media),
        "schema",
    );
    let converted = match media_obj.get("schema") {
        Some(s) => input.convert(s, &schema_ptr)?,
        None => json!({}),
    };
    if matches!(
        method,
        HttpMethod::Get | HttpMethod::Head | HttpMethod::Delete
    ) && is_empty_body(&converted)
    {
        return Ok(Ok(None));
    }
    let description = rb
        .get("description")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|d| !d.is_empty());
    let mut file_fields = Vec::new();
    if kind == BodyKind::Raw {
        let arg = args.claim("body", "body");
        let desc = format!(
            "Request body sent as `{media}`: text, or an object with base64 `content` for bytes.{}",
            description.map(|d| format!(" {d}")).unwrap_or_default()
        );
        args.add(&arg, file_schema(Some(&desc)), required);
        return Ok(Ok(Some(Body {
            content_type,
            kind,
            required,
            args: BodyArgs::Whole(arg),
            file_fields,
            min_fields: 0,
        })));
    }
    let min_fields = converted
        .get("minProperties")
        .and_then(Value::as_u64)
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let shape = object_shape(&converted).filter(|s| !s.properties.is_empty());
    let args_map = match shape {
        Some(shape) => {
            let mut pairs = Vec::new();
            for (prop, schema) in &shape.properties {
                let arg = args.claim(prop, "body");
                let description = schema.get("description").and_then(Value::as_str);
                let schema = if kind != BodyKind::Json && is_file(schema) {
                    file_fields.push(prop.clone());
                    file_schema(description)
                } else if kind != BodyKind::Json && is_file_array(schema) {
                    file_fields.push(prop.clone());
                    let mut arr = json!({"type": "array", "items": file_schema(None)});
                    for key in ["description", "minItems", "maxItems"] {
                        if let Some(v) = schema.get(key) {
                            arr[key] = v.clone();
                        }
                    }
                    arr
                } else {
                    schema.clone()
                };
                let field_required = required && shape.required.iter().any(|r| r == prop);
                args.add(&arg, schema, field_required);
                pairs.push((arg, prop.clone()));
            }
            BodyArgs::Fields(pairs)
        }
        None => {
            let arg = args.claim("body", "body");
            let mut schema = converted;
            if let (Some(d), Value::Object(m)) = (description, &mut schema) {
                m.entry("description")
                    .or_insert_with(|| Value::String(d.to_string()));
            }
            args.add(&arg, schema, required);
            BodyArgs::Whole(arg)
        }
    };
    Ok(Ok(Some(Body {
        content_type,
        kind,
        required,
        min_fields: if matches!(args_map, BodyArgs::Fields(_)) {
            min_fields
        } else {
            0
        },
        args: args_map,
        file_fields,
    })))
}
