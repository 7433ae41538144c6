//! Responses: every documented status with its converted schema, and the
//! success schema the policy turns into the output schema.

use std::sync::Arc;

use serde_json::Value;

use super::{LowerCtx, Output};
use crate::error::{Result, push_pointer};
use crate::ir::{Envelope, Response};
use crate::refs::deref;
use crate::schema::{MemoBody, SchemaMode, kept_defs, nesting_placed};

fn is_json(media: &str) -> bool {
    let m = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    m == "application/json" || m.ends_with("+json") || m == "*/*"
}

/// What a success schema gives a tool, shared with every tool whose
/// success source schema is the same.
pub(crate) type Success = Arc<Output>;

/// `(responses, success schema)`; the success schema is that of the lowest
/// 2xx status with a JSON body, with its `$defs` attached. Response
/// schemas are kept in shared form (see [`LowerCtx::share`]).
pub(crate) fn collect(
    ctx: &LowerCtx<'_>,
    op: &Value,
    op_ptr: &str,
) -> Result<(Vec<Response>, Option<Success>)> {
    let Some(responses) = op.get("responses") else {
        return Ok((Vec::new(), None));
    };
    let base = push_pointer(op_ptr, "responses");
    let Some(map) = responses.as_object() else {
        return Err(ctx.invalid(&base, "`responses` must be an object"));
    };
    let mut out = Vec::with_capacity(map.len());
    let mut success: Option<(String, Success)> = None;
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
        let source = media_obj.get("schema").filter(|_| is_json(media));
        let Some(source) = source else {
            out.push(Response {
                status: status.clone(),
                content_type: Some(media.clone()),
                schema: None,
            });
            continue;
        };
        let success_candidate = status.starts_with('2');
        // Conversion is a function of the source node (a fresh converter,
        // absolute `$ref` targets), so equal sources share one result:
        // shared error bodies repeat across most operations, and many
        // operations return the same object.
        let key: Arc<str> = Arc::from(crate::json_text::to_string(source));
        let memoised = ctx.memo_get(&key, success_candidate);
        let (text, output) = match memoised {
            Some(found) => found,
            None => {
                let schema_ptr = push_pointer(
                    &push_pointer(&push_pointer(&ptr, "content"), media),
                    "schema",
                );
                let (mut converted, bodies) = convert(ctx, source, &schema_ptr)?;
                // The response text is written in shared form (it validates
                // the same bodies). An output the policy takes as it is
                // reuses that value and text; only one it unwraps is made
                // apart, from the converted schema (placeholders and all:
                // the policy reads and moves the root only).
                let unwrapped = (success_candidate && ctx.policy.unwraps(&converted))
                    .then(|| converted.clone());
                // The declared definitions are found before sharing, the
                // bodies where their placeholders are (see `LowerCtx::output`).
                let declared = (success_candidate && unwrapped.is_none())
                    .then(|| kept_defs(&converted, &bodies));
                let placed = ctx.share_with(&mut converted, &bodies);
                let text = ctx.intern_placed(&converted, &placed)?;
                let output = match (unwrapped, declared) {
                    (Some(original), _) => Some(Arc::new(ctx.output_placed(original, &bodies)?)),
                    (None, Some(declared)) => Some(Arc::new(LowerCtx::shared_output(
                        Envelope::None,
                        Some((declared, text.clone(), nesting_placed(&converted, &placed))),
                    ))),
                    (None, None) => None,
                };
                ctx.memo_put(key, text, output)
            }
        };
        // The memo may hold the output another tool's success response made
        // of this source: only a success response of this one takes it.
        if let Some(output) = output.filter(|_| success_candidate)
            && success.as_ref().is_none_or(|(best, _)| status < best)
        {
            success = Some((status.clone(), output));
        }
        out.push(Response {
            status: status.clone(),
            content_type: Some(media.clone()),
            schema: Some(text),
        });
    }
    Ok((out, success.map(|(_, s)| s)))
}

/// One response schema converted in output mode, its `$defs` attached
/// (with placeholders for the bodies taken from the memo), and those
/// bodies by name.
fn convert(
    ctx: &LowerCtx<'_>,
    source: &Value,
    pointer: &str,
) -> Result<(Value, Vec<(String, MemoBody)>)> {
    let mut conv = ctx.converter(SchemaMode::Output);
    let mut converted = conv.convert(source, pointer)?;
    let (defs, bodies) = conv.into_defs_and_memo_bodies();
    if !defs.is_empty() {
        if let Value::Object(m) = &mut converted {
            m.insert("$defs".into(), Value::Object(defs));
        } else {
            let mut m = serde_json::Map::new();
            m.insert("allOf".into(), Value::Array(vec![converted]));
            m.insert("$defs".into(), Value::Object(defs));
            converted = Value::Object(m);
        }
    }
    Ok((converted, bodies))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::config::ForgeConfig;
    use crate::ir::Tool;

    fn tools(spec: &str) -> Vec<Tool> {
        tools_with(spec, |_| {})
    }

    fn tools_with(spec: &str, configure: impl Fn(&mut ForgeConfig)) -> Vec<Tool> {
        let doc = crate::load::load(spec.as_bytes(), "spec.json").unwrap();
        let mut config = ForgeConfig::generic("t", std::path::Path::new("spec.json"), "0");
        configure(&mut config);
        let cat = crate::lower::build_catalogue(&doc, &config).unwrap();
        let mut tools: Vec<Tool> = cat.products.into_iter().flat_map(|p| p.tools).collect();
        tools.sort_by(|a, b| a.operation_id.cmp(&b.operation_id));
        tools
    }

    #[test]
    fn unwrapped_outputs_of_schemas_holding_memo_bodies_wrap_their_responses() {
        // Recursive definitions are taken from the def memo (placeholders
        // in the converted schema); each success is not an object, so the
        // policy wraps it as `{result}`, and several sources miss the
        // response memo. Each output must be its response wrapped, whole
        // (no placeholder left), and declared as its own text declares.
        let node = serde_json::json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "n".repeat(200)},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
            "parent": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Node"}]}}});
        let mut paths = serde_json::Map::new();
        for i in 0..4 {
            let schema = serde_json::json!({"description": format!("source {i}"), "anyOf": [
                {"$ref": "#/components/schemas/Node"}, {"type": "string"},
                {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}]});
            paths.insert(
                format!("/n{i}"),
                serde_json::json!({"get": {"operationId": format!("n{i}"),
                "responses": {"200": {"description": "ok",
                    "content": {"application/json": {"schema": schema}}}}}}),
            );
        }
        let spec = serde_json::json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": paths, "components": {"schemas": {"Node": node}}});
        let tools = tools(&spec.to_string());
        assert_eq!(tools.len(), 4);
        for tool in &tools {
            let output = tool.output_schema.as_ref().expect("an output");
            let value = output.to_value().unwrap();
            assert!(!value.to_string().contains("null"), "{value}");
            let response = tool.responses[0]
                .schema
                .as_ref()
                .unwrap()
                .to_value()
                .unwrap();
            let mut response = crate::schema::inline_shared(&response).into_owned();
            let defs = response.as_object_mut().unwrap().shift_remove("$defs");
            let mut wrapped =
                serde_json::json!({"type": "object", "properties": {"result": response}});
            if let Some(defs) = defs {
                wrapped["$defs"] = defs;
            }
            assert_eq!(
                crate::schema::inline_shared(&value).into_owned(),
                wrapped,
                "{}",
                tool.name
            );
            assert_eq!(
                crate::emit::typescript::output_declaration(output).unwrap(),
                crate::emit::typescript::declaration_of(&value),
                "{}",
                tool.name
            );
        }
    }

    #[test]
    fn equal_success_sources_share_one_output() {
        let thing = r##"{"$ref": "#/components/schemas/Thing"}"##;
        let error = r##"{"$ref": "#/components/schemas/Error"}"##;
        let op = |id: &str, ok: &str, err: &str| {
            format!(
                r#"{{"get": {{"operationId": "{id}", "responses": {{
                  "200": {{"description": "ok", "content": {{"application/json": {{"schema": {ok}}}}}}},
                  "404": {{"description": "no", "content": {{"application/json": {{"schema": {err}}}}}}}}}}}}}"#
            )
        };
        // `c` returns as its success the schema `a` and `b` return as an
        // error: the memo holds its text first, without an output.
        let spec = format!(
            r#"{{"openapi": "3.0.3", "info": {{"title": "t", "version": "1"}},
              "paths": {{"/a": {}, "/b": {}, "/c": {}}},
              "components": {{"schemas": {{
                "Thing": {{"type": "object", "properties": {{"id": {{"type": "string"}}}}}},
                "Error": {{"type": "object", "properties": {{"code": {{"type": "integer"}}}}}}}}}}}}"#,
            op("a", thing, error),
            op("b", thing, error),
            op("c", error, thing),
        );
        let tools = tools(&spec);
        let [a, b, c] = [&tools[0], &tools[1], &tools[2]];
        let (Some(oa), Some(ob), Some(oc)) = (&a.output_schema, &b.output_schema, &c.output_schema)
        else {
            panic!("every tool has an output schema");
        };
        assert!(Arc::ptr_eq(oa, ob));
        assert_eq!(oa.to_value().unwrap()["properties"]["id"]["type"], "string");
        assert_eq!(
            oc.to_value().unwrap()["properties"]["code"]["type"],
            "integer"
        );
        // The error text of `a` is the success text of `c`: one allocation.
        let text = |t: &Tool, status: &str| {
            let r = t.responses.iter().find(|r| r.status == status).unwrap();
            Arc::clone(&r.schema.as_ref().unwrap().0)
        };
        assert!(Arc::ptr_eq(&text(a, "404"), &text(c, "200")));
        assert!(Arc::ptr_eq(&text(a, "200"), &text(b, "200")));
    }

    #[test]
    fn equal_texts_from_other_sources_share_one_allocation() {
        // Different sources (so no memo hit) that convert to one text, and
        // one that converts to another.
        let op = |id: &str, schema: &str| {
            format!(
                r#"{{"get": {{"operationId": "{id}", "responses": {{
                  "404": {{"description": "no", "content": {{"application/json": {{"schema": {schema}}}}}}}}}}}}}"#
            )
        };
        let spec = format!(
            r#"{{"openapi": "3.0.3", "info": {{"title": "t", "version": "1"}},
              "paths": {{"/a": {}, "/b": {}, "/c": {}}}}}"#,
            op("a", r#"{"type": "string", "x-note": "one"}"#),
            op("b", r#"{"type": "string", "x-note": "two"}"#),
            op("c", r#"{"type": "integer", "x-note": "one"}"#),
        );
        let tools = tools(&spec);
        let text = |t: &Tool| Arc::clone(&t.responses[0].schema.as_ref().unwrap().0);
        let [a, b, c] = [text(&tools[0]), text(&tools[1]), text(&tools[2])];
        assert_eq!(a, b, "the test needs sources that convert alike");
        assert!(Arc::ptr_eq(&a, &b));
        assert_ne!(a, c);
    }

    #[test]
    fn an_error_response_gives_no_output_though_another_tool_returns_it() {
        // `a` returns `Thing` as its success and fills the memo with its
        // output; `b` and `c` return it only as an error or a default.
        let spec = serde_json::json!({
            "openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": {
                "/a": {"get": {"operationId": "a", "responses": {"200": {"description": "ok",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}},
                "/b": {"get": {"operationId": "b", "responses": {"404": {"description": "no",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}},
                "/c": {"get": {"operationId": "c", "responses": {"default": {"description": "any",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}}
            },
            "components": {"schemas": {
                "Thing": {"type": "array", "items": {"type": "string"}}
            }}
        })
        .to_string();
        // One thread builds the operations in document order, `a` first.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let tools = pool.install(|| tools(&spec));
        assert!(tools[0].output_schema.is_some());
        assert_eq!(tools[0].envelope, crate::ir::Envelope::Wrapped);
        for tool in &tools[1..] {
            assert!(tool.output_schema.is_none(), "{}", tool.operation_id);
            assert_eq!(tool.envelope, crate::ir::Envelope::None);
        }
    }

    #[test]
    fn success_responses_share_the_output_text_and_lists_of_recursive_types_resolve() {
        // `Thing` repeats a large part (shared into `$defs`); `/list`
        // returns a list of the recursive `Node`, which the policy wraps.
        let big: serde_json::Value = serde_json::json!({"type": "object", "description": "x".repeat(200),
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}});
        let spec = serde_json::json!({
            "openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": {
                "/thing": {"get": {"operationId": "thing", "responses": {"200": {"description": "ok",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}},
                "/list": {"get": {"operationId": "list", "responses": {"200": {"description": "ok",
                    "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}}}
            },
            "components": {"schemas": {
                "Thing": {"type": "object", "properties": {"first": big, "second": big}},
                "Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}
            }}
        });
        let tools = tools(&spec.to_string());
        let (list, thing) = (&tools[0], &tools[1]);
        let out = thing.output_schema.as_ref().unwrap();
        let ok = thing.responses[0].schema.as_ref().unwrap();
        assert!(Arc::ptr_eq(&out.text.0, &ok.0), "one text for both");
        let value = out.to_value().unwrap();
        assert!(
            value["$defs"].as_object().is_some_and(|d| !d.is_empty()),
            "{value}"
        );
        let whole = crate::schema::inline_shared(&value);
        assert_eq!(whole["properties"]["first"], whole["properties"]["second"]);
        assert_eq!(
            whole["properties"]["first"]["properties"]["b"]["type"],
            "integer"
        );

        assert_eq!(list.envelope, crate::ir::Envelope::Wrapped);
        let value = list.output_schema.as_ref().unwrap().to_value().unwrap();
        let validator = jsonschema::draft202012::new(&value).unwrap();
        assert!(
            validator.is_valid(&serde_json::json!({"result": [{"children": [{"children": []}]}]}))
        );
        assert!(!validator.is_valid(&serde_json::json!({"result": [{"children": [7]}]})));
        // The response keeps the list itself, its definitions at its root.
        let response = list.responses[0]
            .schema
            .as_ref()
            .unwrap()
            .to_value()
            .unwrap();
        assert_eq!(response["type"], "array");
        assert!(jsonschema::draft202012::new(&response).is_ok());
    }

    #[test]
    fn memo_bodies_are_filled_in_whether_shared_or_not() {
        // Recursive `Node` bodies come from the def memo from the second
        // schema on; `/list` is unwrapped by the policy; the big
        // description makes the shared form differ from the plain one.
        let node = |n: &str| serde_json::json!({"$ref": format!("#/components/schemas/{n}")});
        let ok = |schema: serde_json::Value| {
            serde_json::json!({"200": {"description": "ok",
            "content": {"application/json": {"schema": schema}}}})
        };
        let spec = serde_json::json!({
            "openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": {
                "/a": {"get": {"operationId": "a", "responses": ok(node("Node"))}},
                "/b": {"get": {"operationId": "b", "responses": ok(serde_json::json!({"type": "object",
                    "properties": {"n": node("Node"), "m": node("Node")}}))}},
                "/list": {"get": {"operationId": "list", "responses": ok(serde_json::json!({
                    "type": "array", "items": node("Node")}))}}
            },
            "components": {"schemas": {
                "Node": {"type": "object", "properties": {
                    "tag": {"type": "object", "description": "x".repeat(200)},
                    "again": {"type": "object", "description": "x".repeat(200)},
                    "children": {"type": "array", "items": node("Node")}}}
            }}
        })
        .to_string();
        let strict =
            |c: &mut ForgeConfig| c.options.schema_profile = crate::config::SchemaProfile::Strict;
        let unshared = |c: &mut ForgeConfig| c.options.share_subschemas = false;
        let instance = serde_json::json!({"children": [{"tag": {}, "children": []}]});
        let configs: [&dyn Fn(&mut ForgeConfig); 3] = [&|_| {}, &strict, &unshared];
        for configure in configs {
            for tool in tools_with(&spec, configure) {
                let texts = tool.responses.iter().filter_map(|r| r.schema.as_ref());
                let output = tool.output_schema.as_ref().map(|o| &o.text);
                for text in texts.chain(output) {
                    let value = text.to_value().unwrap();
                    let defs = value["$defs"].as_object().cloned().unwrap_or_default();
                    assert!(defs.values().all(serde_json::Value::is_object), "{value}");
                    let validator = jsonschema::draft202012::new(&value).unwrap();
                    let sample = match (tool.operation_id.as_str(), text == output.unwrap()) {
                        ("list", true) => serde_json::json!({"result": [instance.clone()]}),
                        ("list", false) => serde_json::json!([instance.clone()]),
                        ("b", _) => serde_json::json!({"n": instance.clone()}),
                        _ => instance.clone(),
                    };
                    assert!(validator.is_valid(&sample), "{} {value}", tool.operation_id);
                    let bad = serde_json::json!({"children": [{"tag": 7}]});
                    assert!(!validator.is_valid(&bad) || tool.operation_id != "a");
                }
            }
        }
    }

    #[test]
    fn declarations_name_the_specs_recursive_types_however_the_schema_is_shared() {
        // `Item` repeats a large part that refers back to the recursive
        // `Node`: shared, that part would be a recursive definition of
        // its own, named per tool. Declared before sharing, only `Node`
        // (and `Item`, on the cycle) are named, as without sharing.
        let node = |n: &str| serde_json::json!({"$ref": format!("#/components/schemas/{n}")});
        let part = serde_json::json!({"type": "object", "description": "x".repeat(200),
            "properties": {"owner": node("Node"), "note": {"type": "string"}}});
        let ok = |schema: serde_json::Value| {
            serde_json::json!({"200": {"description": "ok",
            "content": {"application/json": {"schema": schema}}}})
        };
        let spec = serde_json::json!({
            "openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": {
                "/a": {"get": {"operationId": "a", "responses": ok(node("Node"))}},
                "/b": {"get": {"operationId": "b", "responses": ok(serde_json::json!({
                    "type": "object", "properties": {"first": node("Item"), "second": node("Node")}}))}},
                "/list": {"get": {"operationId": "list", "responses": ok(serde_json::json!({
                    "type": "array", "items": node("Item")}))}}
            },
            "components": {"schemas": {
                "Node": {"type": "object", "properties": {"items": {"type": "array", "items": node("Item")}}},
                "Item": {"type": "object", "properties": {"one": part.clone(), "two": part}}
            }}
        })
        .to_string();
        let declared = |configure: &dyn Fn(&mut ForgeConfig)| -> Vec<_> {
            tools_with(&spec, configure)
                .into_iter()
                .map(|t| {
                    t.output_schema
                        .map(|o| crate::emit::typescript::output_declaration(&o).unwrap())
                })
                .collect()
        };
        let shared = declared(&|_| {});
        let tools = tools(&spec);
        let value = tools[1].output_schema.as_ref().unwrap().to_value().unwrap();
        let defs = value["$defs"].as_object().unwrap();
        assert!(defs.len() > 2, "the test needs a shared part: {value}");
        for declaration in shared.iter().flatten() {
            for (name, _) in &declaration.aliases {
                assert!(matches!(name.as_str(), "Node" | "Item"), "{name}");
            }
        }
        let unshared = declared(&|c: &mut ForgeConfig| c.options.share_subschemas = false);
        assert_eq!(shared, unshared);
    }
}
