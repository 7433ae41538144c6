//! Responses: every documented status with its converted schema, and the
//! success schema the policy turns into the output schema.

use serde_json::Value;

use super::Ctx;
use crate::error::{Result, push_pointer};
use crate::ir::Response;
use crate::refs::deref;
use crate::schema::SchemaMode;

fn is_json(media: &str) -> bool {
    let m = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    m == "application/json" || m.ends_with("+json") || m == "*/*"
}

/// `(responses, success schema)`; the success schema is that of the lowest
/// 2xx status with a JSON body, with its `$defs` attached.
pub(crate) fn collect(
    ctx: &Ctx<'_>,
    op: &Value,
    op_ptr: &str,
) -> Result<(Vec<Response>, Option<Value>)> {
    let Some(responses) = op.get("responses") else {
        return Ok((Vec::new(), None));
    };
    let base = push_pointer(op_ptr, "responses");
    let Some(map) = responses.as_object() else {
        return Err(ctx.invalid(&base, "`responses` must be an object"));
    };
    let mut out = Vec::with_capacity(map.len());
    let mut success: Option<(String, Value)> = None;
    for (status, resp) in map {
        if status.starts_with("x-") {
            continue;
        }
        let (resp, ptr) = deref(ctx.doc, resp, &push_pointer(&base, status))?;
        let content = resp.get("content").and_then(Value::as_object);
        let chosen = content.and_then(|c| {
            c.iter()
                .find(|(m, _)| is_json(m))
                .or_else(|| c.iter().next())
        });
        let Some((media, media_obj)) = chosen else {
            out.push(Response {
                status: status.clone(),
                content_type: None,
                schema: None,
            });
            continue;
        };
        let schema = match media_obj.get("schema") {
            Some(s) if is_json(media) => {
                let schema_ptr = push_pointer(
                    &push_pointer(&push_pointer(&ptr, "content"), media),
                    "schema",
                );
                let mut conv = ctx.converter(SchemaMode::Output);
                let mut converted = conv.convert(s, &schema_ptr)?;
                let defs = conv.into_defs();
                if !defs.is_empty() {
                    if let Value::Object(m) = &mut converted {
                        m.insert("$defs".into(), Value::Object(defs));
                    } else {
                        converted = serde_json::json!({"allOf": [converted], "$defs": defs});
                    }
                }
                Some(converted)
            }
            _ => None,
        };
        if status.starts_with('2')
            && is_json(media)
            && let Some(s) = &schema
            && success.as_ref().is_none_or(|(best, _)| status < best)
        {
            success = Some((status.clone(), s.clone()));
        }
        out.push(Response {
            status: status.clone(),
            content_type: Some(media.clone()),
            schema,
        });
    }
    Ok((out, success.map(|(_, s)| s)))
}
