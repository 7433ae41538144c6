//! The host side of `api.request` in `execute`: the only way sandboxed code
//! reaches the network.
//!
//! For each call the host matches method and path against the catalogue's
//! route templates ([`RouteTable`]), fills a literal `{account_id}` with the
//! credential's only account (when the profile fills accounts, as direct
//! tools do), builds the path and query with the matched tool's own
//! parameter rules (per-segment encoding, OpenAPI query styles; unknown
//! query parameters are sent form-encoded), encodes the body, and sends it
//! to the configured base URL with the server-held credential. A 2xx
//! answers `{status, result}` (the payload at the profile's envelope
//! pointers), plus the page metadata under its own name when the envelope
//! has some; anything else rejects the code's promise with the same
//! explanation a direct tool gives (method, path, status, the API's
//! messages, the permissions to grant on 401/403). The token is scrubbed
//! from everything returned.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value, json};

use super::report::Notes;
use super::routes::{Matched, RouteTable, shown};
use crate::authz::Connection;
use crate::catalogue::{BodyArgs, BodyKind, ParamLocation, ToolDef};
use crate::credential::Credential;
use crate::direct::Direct;
use crate::outcome::{Call, emptied_refusal, empty_list_note, map_response};
use crate::progress::{ProgressFn, Reporter};
use crate::request::{
    Args, HttpRequest, RequestBody, build_path_request, build_request, header_safe,
};
use crate::sandbox::{HostApi, HostFuture, HostRequest};
use crate::upstream::path_only;

/// Why an `api.request` promise rejects: the message, and for an answer
/// the API refused, its status and the API's error code (the thrown
/// Error's `status` and `code`).
#[derive(Debug)]
struct Rejection {
    message: String,
    status: Option<u16>,
    code: Option<Value>,
}

impl From<String> for Rejection {
    fn from(message: String) -> Self {
        Self {
            message,
            status: None,
            code: None,
        }
    }
}

impl Rejection {
    /// What the sandbox receives: the plain message, or
    /// `{"message", "status", "code"}` as JSON when there is a status (the
    /// sandbox's settler turns that into an Error with those fields).
    fn payload(self) -> String {
        match self.status {
            None => self.message,
            Some(status) => {
                json!({"message": self.message, "status": status, "code": self.code}).to_string()
            }
        }
    }
}

/// The member of an `api.request` result that says how to get the next
/// page of a list: `{next: <query> | null, items: <pointer in result>}`.
pub const PAGING: &str = "paging";

/// The `paging` member for a 2xx `answer` to `tool` called with `query`
/// (by parameter name), when the profile pages its lists.
fn paging(
    profile: &crate::profile::Profile,
    tool: &ToolDef,
    query: Option<&Map<String, Value>>,
    answer: crate::pages::Answer<'_>,
) -> Option<Value> {
    if !profile.pagination.applies(tool) {
        return None;
    }
    let empty = Map::new();
    let next =
        profile
            .pagination
            .next_query(&profile.envelope, tool, query.unwrap_or(&empty), answer)?;
    let next = match next {
        crate::pages::PageNext::Next(query) => Value::Object(query),
        crate::pages::PageNext::Last => Value::Null,
    };
    let items = profile.envelope.items.unwrap_or("");
    Some(json!({ "next": next, "items": items }))
}

/// RFC 3986 unreserved characters stay, everything else is encoded.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `api.request` for one execution: the routes, the direct pipeline's
/// upstream and account cache, and the caller's credential.
#[derive(Debug, Clone)]
pub struct ApiHost {
    routes: Arc<RouteTable>,
    direct: Arc<Direct>,
    credential: Credential,
    /// How the caller is connected (the refusal texts' decision).
    connection: Connection,
    /// What the run's requests did, for step-up (shared by clones).
    watch: Arc<super::step_up::RunWatch>,
    /// Notes for the model about this run's responses (an empty list the
    /// token may not be allowed to see), added to the tool result: the code
    /// usually returns only part of what it got.
    notes: Notes,
    /// Progress reports, one per API request (when the client asked).
    progress: Option<Reporter>,
    /// API requests made so far (shared by clones).
    made: Arc<AtomicU32>,
}

impl ApiHost {
    /// A host that sends with `credential`.
    pub fn new(routes: Arc<RouteTable>, direct: Arc<Direct>, credential: Credential) -> Self {
        Self {
            routes,
            direct,
            credential,
            connection: Connection::default(),
            watch: Arc::default(),
            notes: Notes::default(),
            progress: None,
            made: Arc::new(AtomicU32::new(0)),
        }
    }

    /// Explains refusals for `connection` (see [`crate::authz`]).
    pub fn with_connection(mut self, connection: Connection) -> Self {
        self.connection = connection;
        self
    }

    /// What this run's requests did (shared by clones).
    pub fn watch(&self) -> Arc<super::step_up::RunWatch> {
        Arc::clone(&self.watch)
    }

    /// Reports each API request to `progress` before sending it.
    pub fn with_progress(mut self, progress: Option<ProgressFn>) -> Self {
        self.progress = progress.map(Reporter);
        self
    }

    /// The notes about this run's responses (shared by clones).
    pub fn notes(&self) -> &Notes {
        &self.notes
    }

    /// Performs one `api.request`: the value the promise resolves with, or
    /// the message it rejects with (token scrubbed).
    pub async fn send(&self, request: HostRequest) -> Result<Value, String> {
        self.send_detailed(request).await.map_err(|r| r.message)
    }

    /// [`ApiHost::send`], keeping a refused call's status and the API's
    /// error code for the thrown Error.
    async fn send_detailed(&self, request: HostRequest) -> Result<Value, Rejection> {
        let credential = &self.credential;
        let built = self
            .build(&request)
            .await
            .map_err(|e| credential.redact(&e))?;
        let (tool, http) = built;
        // Before progress or the request: a hidden operation is not called.
        let scoped = self.connection.path_scope().map(|scope| {
            let merged = self.direct.profile().merged;
            scope.check_path(tool, path_only(&http.path_and_query), merged.as_ref())
        });
        if let Some(refusal) = crate::authz::hidden_refusal(&self.connection, tool)
            .or_else(|| scoped.and_then(Result::err))
        {
            return Err(Rejection::from(format!(
                "{} {}: {refusal}",
                tool.method.as_str(),
                path_only(&http.path_and_query)
            )));
        }
        if let Some(Reporter(progress)) = &self.progress {
            let n = self.made.fetch_add(1, Ordering::Relaxed) + 1;
            let template = tool.routes.first().map_or("", |r| r.template);
            progress(n, format!("{} {template}", tool.method.as_str())).await;
        }
        let path = path_only(&http.path_and_query).to_owned();
        let mut response = match self.direct.upstream().send(&http, Some(credential)).await {
            Ok(r) => r,
            Err(e) => {
                self.watch.saw(&self.connection, tool, &path, None, None);
                return Err(Rejection::from(credential.redact(&e.to_string())));
            }
        };
        let status = response.status;
        // Already scrubbed by the upstream client, before any decoding.
        let mut json: Option<Value> = std::str::from_utf8(&response.body)
            .ok()
            .filter(|t| !t.trim().is_empty())
            .and_then(|t| serde_json::from_str(t).ok());
        let profile = self.direct.profile();
        let refused = !status.is_success()
            || json
                .as_ref()
                .is_some_and(|v| profile.envelope.reports_failure(v));
        if refused {
            let call = Call {
                tool,
                path: &path,
                credential: Some(credential),
                profile,
                connection: &self.connection,
            };
            let code = json
                .as_ref()
                .and_then(|v| profile.envelope.error_code(v))
                .map(|c| match c {
                    Value::String(s) => Value::String(credential.redact(&s)),
                    other => other,
                });
            let result = map_response(call, response);
            let text: Vec<String> = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            let error = credential.redact(&text.join("\n"));
            self.watch.saw(
                &self.connection,
                tool,
                &path,
                Some(status.as_u16()),
                Some(&error),
            );
            return Err(Rejection {
                message: error,
                status: Some(status.as_u16()),
                code,
            });
        }
        let call = Call {
            tool,
            path: &path,
            credential: Some(credential),
            profile,
            connection: &self.connection,
        };
        // An OAuth session's empty list the API may have filtered: refused
        // as a 403 would be (and may ask to step up), as direct tools do.
        let shown = format!(
            "{} {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        );
        if let Some(refusal) = emptied_refusal(call, shown.trim_end(), json.as_ref()) {
            let error = credential.redact(&refusal);
            self.watch
                .saw(&self.connection, tool, &path, Some(403), Some(&error));
            return Err(Rejection {
                message: error,
                status: Some(status.as_u16()),
                code: None,
            });
        }
        self.watch
            .saw(&self.connection, tool, &path, Some(status.as_u16()), None);
        if let Some(note) = empty_list_note(call, json.as_ref()) {
            self.notes
                .add(format!("{} {path}: {note}", tool.method.as_str()));
        }
        let mut out = Map::new();
        out.insert("status".into(), json!(status.as_u16()));
        let url = format!("{}{path}", self.direct.upstream().base());
        if let Some(paging) = json.as_ref().and_then(|body| {
            let answer = crate::pages::Answer {
                body,
                next_link: response.next_link.as_deref(),
                url: &url,
            };
            paging(profile, tool, request.query.as_ref(), answer)
        }) {
            out.insert(PAGING.into(), paging);
        }
        let unwrapped = json.as_mut().and_then(|v| profile.envelope.unwrap(v));
        match (unwrapped, json) {
            (Some((result, page)), _) => {
                out.insert("result".into(), result);
                if let (Some(page), Some(key)) = (page, profile.envelope.page_key()) {
                    out.insert(key, page);
                }
            }
            (None, Some(value)) => {
                out.insert("result".into(), value);
            }
            (None, None) => {
                let result = match String::from_utf8(std::mem::take(&mut response.body)) {
                    Ok(text) if text.trim().is_empty() => Value::Null,
                    Ok(text) => Value::String(text),
                    Err(e) => {
                        return Err(Rejection::from(format!(
                            "{} {path} answered {} with {} bytes of binary data ({}), which cannot be returned to JavaScript",
                            tool.method.as_str(),
                            status.as_u16(),
                            e.as_bytes().len(),
                            response_type(&response.content_type)
                        )));
                    }
                };
                out.insert("result".into(), result);
            }
        }
        Ok(Value::Object(out))
    }

    /// Matches the route and builds the upstream request.
    async fn build(
        &self,
        request: &HostRequest,
    ) -> Result<(&'static ToolDef, HttpRequest), String> {
        let matched = self
            .routes
            .resolve(&request.method, &request.path)
            .map_err(|e| e.to_string())?;
        let tool = matched.tool;
        let mut args = self.path_args(&matched).await?;
        let mut extra: Vec<String> = Vec::new();
        if let Some(query) = &request.query {
            for (name, value) in query {
                if value.is_null() {
                    continue;
                }
                let known = tool
                    .params
                    .iter()
                    .find(|p| p.location == ParamLocation::Query && p.name == name);
                match known {
                    Some(def) => {
                        check_query_shape(tool, def.arg, name, value)?;
                        args.insert(def.arg.to_owned(), value.clone());
                    }
                    None => unknown_query(name, value, &mut extra),
                }
            }
        }
        let context = |e: crate::BuildError| {
            format!(
                "api.request {} {}: {e}",
                tool.method.as_str(),
                shown(&request.path)
            )
        };
        let mut http = build_path_request(matched.tool, &args).map_err(context)?;
        if !extra.is_empty() {
            http.path_and_query
                .push(if http.path_and_query.contains('?') {
                    '&'
                } else {
                    '?'
                });
            http.path_and_query.push_str(&extra.join("&"));
        }
        if let Some(body) = request.body.as_ref().filter(|b| !b.is_null()) {
            http.body = Some(encode_body(
                tool,
                request.content_type.as_deref(),
                body,
                &args,
                &context,
            )?);
        }
        Ok((tool, http))
    }

    /// Arguments from the path: placeholder values (a literal
    /// `{account_id}` filled with the default account) and the merged
    /// route's selector.
    async fn path_args(&self, matched: &Matched) -> Result<Args, String> {
        let mut args = Args::new();
        if let Some((arg, value)) = matched.selector {
            args.insert(arg.to_owned(), Value::String(value.to_owned()));
        }
        for (arg, value) in &matched.embedded {
            args.insert((*arg).to_owned(), Value::String(value.clone()));
        }
        for (value, arg) in &matched.segments {
            let Some(arg) = arg else { continue };
            let placeholder = value.starts_with('{') && value.ends_with('}');
            if !placeholder {
                args.insert((*arg).to_owned(), Value::String(value.clone()));
                continue;
            }
            if !matched.is_account_arg(self.direct.profile(), arg) {
                return Err(format!(
                    "api.request: path segment `{}` is a template placeholder; replace it with a real value (find one with a list call first)",
                    shown(value)
                ));
            }
            // Left absent: the account cache fills it.
            self.direct
                .fill_account(matched.tool, &mut args, &self.credential)
                .await?;
            if !args.contains_key(*arg) {
                return Err(format!(
                    "api.request: `{}` cannot be filled with a default account here; pass the account ID",
                    shown(value)
                ));
            }
        }
        Ok(args)
    }
}

impl HostApi for ApiHost {
    fn request(&self, request: HostRequest) -> HostFuture {
        let host = self.clone();
        Box::pin(async move {
            host.send_detailed(request)
                .await
                .map_err(Rejection::payload)
        })
    }
}

/// Refuses an object or array for a query parameter whose schema declares
/// neither: the parameter's style would spread an object's keys into the
/// query as parameters of their own (`{page: {a: 1}}` → `?a=1`), which the
/// API reads as something else entirely.
fn check_query_shape(tool: &ToolDef, arg: &str, name: &str, value: &Value) -> Result<(), String> {
    let given = match value {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        _ => return Ok(()),
    };
    let Some(declared) = declared_types(&tool.input_schema_text(), arg) else {
        return Ok(());
    };
    if declared.iter().any(|t| t == given) {
        return Ok(());
    }
    Err(format!(
        "api.request {} {}: query parameter `{}` takes {}, not an {given}",
        tool.method.as_str(),
        tool.primary_path(),
        shown(name),
        declared.join(" or ")
    ))
}

/// The JSON types the input schema declares for argument `arg` (the union
/// over `anyOf`/`oneOf` branches, through `$ref`s into the root's `$defs`,
/// where the generator keeps subschemas a schema repeats); `None` when the
/// schema does not say.
fn declared_types(input_schema: &str, arg: &str) -> Option<Vec<String>> {
    fn collect(root: &Value, schema: &Value, out: &mut Vec<String>, depth: usize) -> bool {
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        {
            // A recursive definition ends the walk without an answer.
            return depth < 16
                && root
                    .pointer(target)
                    .is_some_and(|t| collect(root, t, out, depth + 1));
        }
        match schema.get("type") {
            Some(Value::String(t)) => out.push(t.clone()),
            Some(Value::Array(ts)) => {
                out.extend(ts.iter().filter_map(Value::as_str).map(str::to_owned))
            }
            _ => {
                let branches = ["anyOf", "oneOf"]
                    .iter()
                    .filter_map(|k| schema.get(*k).and_then(Value::as_array))
                    .flatten()
                    .collect::<Vec<_>>();
                if branches.is_empty() {
                    return false;
                }
                return branches
                    .into_iter()
                    .all(|b| collect(root, b, out, depth + 1));
            }
        }
        true
    }
    let schema: Value = serde_json::from_str(input_schema).ok()?;
    let property = schema.get("properties")?.get(arg)?;
    let mut out = Vec::new();
    collect(&schema, property, &mut out, 0).then_some(out)
}

/// `name=value` pairs of a query parameter the spec does not list: arrays
/// repeat the name, objects use `name[key]=value`.
fn unknown_query(name: &str, value: &Value, out: &mut Vec<String>) {
    let key = utf8_percent_encode(name, COMPONENT).to_string();
    let text = |v: &Value| -> String {
        let raw = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        utf8_percent_encode(&raw, COMPONENT).to_string()
    };
    match value {
        Value::Array(items) => out.extend(
            items
                .iter()
                .filter(|v| !v.is_null())
                .map(|v| format!("{key}={}", text(v))),
        ),
        Value::Object(map) => out.extend(map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| {
            format!(
                "{key}%5B{}%5D={}",
                utf8_percent_encode(k, COMPONENT),
                text(v)
            )
        })),
        scalar => out.push(format!("{key}={}", text(scalar))),
    }
}

fn is_json_type(content_type: &str) -> bool {
    let base = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    base == "application/json" || base.ends_with("+json")
}

/// Encodes the body. JSON bodies (the default, and any `…/json` or
/// `…+json` type) are sent as given. Form, multipart and raw operations go
/// through the tool's own body builder (file fields, base64 content), fed
/// from the body object's properties.
fn encode_body(
    tool: &'static ToolDef,
    content_type: Option<&str>,
    body: &Value,
    args: &Args,
    context: &dyn Fn(crate::BuildError) -> String,
) -> Result<RequestBody, String> {
    if let Some(given) = content_type.filter(|c| !header_safe(c)) {
        return Err(format!(
            "api.request: contentType `{}` cannot be sent: a header value must be printable ASCII on one line",
            shown(given)
        ));
    }
    let def = tool.body;
    let declared = def.map(|d| d.content_type).filter(|c| !c.is_empty());
    let wanted = content_type.or(declared).unwrap_or("application/json");
    let builder_kind = def.map(|d| d.kind).filter(|k| *k != BodyKind::Json);
    let same_family = |declared: &str| {
        let base = |t: &str| {
            t.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        };
        base(declared) == base(wanted)
    };
    match (def, builder_kind) {
        (Some(def), Some(_)) if declared.is_none_or(same_family) => {
            let mut args = args.clone();
            match def.args {
                BodyArgs::Whole(arg) => {
                    args.insert(arg.to_owned(), body.clone());
                }
                BodyArgs::Fields(pairs) => {
                    let Value::Object(map) = body else {
                        return Err(format!(
                            "api.request {} {}: the body must be an object of form fields",
                            tool.method.as_str(),
                            tool.primary_path()
                        ));
                    };
                    for (prop, value) in map {
                        let Some((arg, _)) = pairs.iter().find(|(_, p)| p == prop) else {
                            let known: Vec<&str> = pairs.iter().map(|(_, p)| *p).collect();
                            return Err(format!(
                                "api.request {} {}: body field `{}` is not part of this operation's {} body; its fields are: {}",
                                tool.method.as_str(),
                                tool.primary_path(),
                                shown(prop),
                                def.content_type,
                                known.join(", ")
                            ));
                        };
                        args.insert((*arg).to_owned(), value.clone());
                    }
                }
            }
            let built = build_request(tool, &args).map_err(context)?;
            built.body.ok_or_else(|| {
                format!(
                    "api.request {} {}: the body is empty",
                    tool.method.as_str(),
                    tool.primary_path()
                )
            })
        }
        _ if is_json_type(wanted) => Ok(RequestBody {
            content_type: wanted.to_owned(),
            bytes: serde_json::to_vec(body).map_err(|e| e.to_string())?,
        }),
        _ => {
            let bytes = match body {
                Value::String(text) => text.as_bytes().to_vec(),
                other => other.to_string().into_bytes(),
            };
            Ok(RequestBody {
                content_type: wanted.to_owned(),
                bytes,
            })
        }
    }
}

fn response_type(content_type: &Option<String>) -> String {
    content_type
        .as_deref()
        .map_or_else(|| "no content type".to_owned(), shown)
}

#[cfg(test)]
mod declared_types_tests {
    use super::declared_types;

    /// A parameter whose schema the generator shared through `$defs` still
    /// declares its type; a reference that loops or names nothing does not.
    #[test]
    fn types_are_read_through_refs() {
        let schema = r##"{"type":"object","properties":{
            "ids":{"$ref":"#/$defs/list"},
            "either":{"anyOf":[{"$ref":"#/$defs/list"},{"type":"string"}]},
            "loop":{"$ref":"#/$defs/loop"},
            "gone":{"$ref":"#/$defs/nope"}},
            "$defs":{"list":{"type":"array","items":{"type":"string"}},"loop":{"$ref":"#/$defs/loop"}}}"##;
        assert_eq!(declared_types(schema, "ids"), Some(vec!["array".into()]));
        assert_eq!(
            declared_types(schema, "either"),
            Some(vec!["array".into(), "string".into()])
        );
        assert_eq!(declared_types(schema, "loop"), None);
        assert_eq!(declared_types(schema, "gone"), None);
    }
}
