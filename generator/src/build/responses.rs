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
        let success_candidate = status.starts_with('2') && is_json(media);
        let source = media_obj.get("schema");
        // Only a success body's schema is needed as a value (for the output
        // schema); the others only as text, which is memoised by source.
        if !success_candidate
            && is_json(media)
            && let Some(s) = source
            && let Some(text) = ctx.memo_text(s)
        {
            out.push(Response {
                status: status.clone(),
                content_type: Some(media.clone()),
                schema: Some(text),
            });
            continue;
        }
        let schema = match source {
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
        let text = schema.as_ref().map(|s| ctx.intern(s)).transpose()?;
        if !success_candidate && let (Some(s), Some(t)) = (source, &text) {
            ctx.remember_text(s, t);
        }
        if status.starts_with('2')
            && is_json(media)
            && let Some(s) = schema
            && success.as_ref().is_none_or(|(best, _)| status < best)
        {
            success = Some((status.clone(), s));
        }
        out.push(Response {
            status: status.clone(),
            content_type: Some(media.clone()),
            schema: text,
        });
    }
    Ok((out, success.map(|(_, s)| s)))
}
