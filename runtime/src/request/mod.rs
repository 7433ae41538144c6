//! Request building: turns a tool's validated arguments into an upstream
//! HTTP request (method, path and query, headers, body).
//!
//! The entry point is [`build_request`]. It follows the OpenAPI 3 parameter
//! serialisation rules (`style` / `explode` / `allowReserved`) and never
//! panics: arguments of the wrong JSON type produce a [`BuildError`] that
//! names the tool, the argument and the expected shape, so a model reading
//! the message can correct its call.

mod body;
mod encode;
mod header;
mod multipart;
mod path;
mod query;

pub use header::header_safe;

use serde_json::{Map, Value};

use crate::catalogue::{Method, Route, ToolDef};

/// Tool arguments: the JSON object a model sent as the tool input.
pub type Args = Map<String, Value>;

/// A fully built upstream request, relative to the API base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// HTTP method.
    pub method: Method,
    /// Path plus optional `?query`; already percent-encoded, starts with `/`.
    pub path_and_query: String,
    /// Header name/value pairs in the order they were produced (parameter
    /// order, then one `Cookie` header if any cookie parameter is set). The
    /// body's `Content-Type` is not included: see [`RequestBody::content_type`].
    pub headers: Vec<(String, String)>,
    /// Request body, when one is sent.
    pub body: Option<RequestBody>,
    /// The credentials the request needs (the tool's requirement); `None`:
    /// the profile's global one. Applied when sending, so credentials never
    /// appear in [`HttpRequest::path_and_query`] or `headers`.
    pub security: Option<crate::security::Requirement>,
    /// The tool's `operation_id` (`None`: a request no tool makes), which
    /// picks the OAuth scopes a client-credentials token is asked for.
    pub operation: Option<&'static str>,
}

/// An encoded request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestBody {
    /// Value for the `Content-Type` header (multipart includes its boundary).
    pub content_type: String,
    /// Encoded bytes.
    pub bytes: Vec<u8>,
}

impl HttpRequest {
    /// The absolute URL: `base` without its trailing slashes, then
    /// [`path_and_query`](Self::path_and_query).
    pub fn url(&self, base: &str) -> String {
        let base = base.trim_end_matches('/');
        let mut url = String::with_capacity(base.len() + self.path_and_query.len());
        url.push_str(base);
        url.push_str(&self.path_and_query);
        url
    }
}

/// Why a request could not be built from a tool's arguments.
///
/// Every message names the tool and the argument at fault and says what was
/// expected, so it can be handed to the model as is.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// No route of a merged tool matches the selector argument.
    #[error("tool `{tool}`: argument `{arg}` is {got}; it must be one of: {allowed}")]
    NoRoute {
        /// Tool name.
        tool: &'static str,
        /// The selector argument.
        arg: String,
        /// What was given (`missing`, a quoted string, or a JSON type).
        got: String,
        /// The accepted values, quoted and comma-separated.
        allowed: String,
    },
    /// A required argument is absent or `null`.
    #[error("tool `{tool}`: required argument `{arg}` is missing (it is sent as the {place})")]
    Missing {
        /// Tool name.
        tool: &'static str,
        /// The missing argument.
        arg: String,
        /// Where the value goes, e.g. ``query parameter `page` ``.
        place: String,
    },
    /// Fewer body fields were given than the body requires.
    #[error("tool `{tool}`: give at least {min} of the body arguments {}", .args.join(", "))]
    TooFewFields {
        /// Tool name.
        tool: &'static str,
        /// The body's arguments.
        args: Vec<&'static str>,
        /// How many are needed.
        min: u32,
    },
    /// A path argument is empty and would leave an empty path segment.
    #[error(
        "tool `{tool}`: argument `{arg}` must not be empty (it fills a segment of the URL path)"
    )]
    EmptyPathValue {
        /// Tool name.
        tool: &'static str,
        /// The argument.
        arg: String,
    },
    /// A path argument would form a `.` or `..` segment, which URL parsers
    /// resolve even when percent-encoded (`%2E`), reaching another resource.
    #[error(
        "tool `{tool}`: argument `{arg}` would make the URL path segment `{segment}`; a path segment may not be `.` or `..`"
    )]
    DotSegment {
        /// Tool name.
        tool: &'static str,
        /// The argument.
        arg: String,
        /// The segment it would produce.
        segment: String,
    },
    /// An argument has the wrong JSON type or shape.
    #[error("tool `{tool}`: argument `{arg}` must be {expected}, but {got} was given")]
    WrongType {
        /// Tool name.
        tool: &'static str,
        /// The argument (nested fields as `arg.field`).
        arg: String,
        /// The expected shape, e.g. `a string`.
        expected: &'static str,
        /// The JSON type that was given, e.g. `an object`.
        got: &'static str,
    },
    /// A value would put a line break or control character into a header.
    #[error(
        "tool `{tool}`: argument `{arg}` must be printable ASCII, without line breaks (CR, LF), other control characters or non-ASCII characters, because it is sent in the `{header}` header"
    )]
    InvalidHeaderValue {
        /// Tool name.
        tool: &'static str,
        /// The argument.
        arg: String,
        /// The header the value was meant for.
        header: String,
    },
    /// A file or raw body declares an unknown `encoding`.
    #[error("tool `{tool}`: argument `{arg}` has encoding `{got}`; use \"utf8\" or \"base64\"")]
    UnknownEncoding {
        /// Tool name.
        tool: &'static str,
        /// The argument (`arg.encoding`).
        arg: String,
        /// The encoding given.
        got: String,
    },
    /// Base64 content does not decode.
    #[error("tool `{tool}`: argument `{arg}` is not valid base64: {source}")]
    InvalidBase64 {
        /// Tool name.
        tool: &'static str,
        /// The argument (`arg.content`).
        arg: String,
        /// The decoder's complaint.
        #[source]
        source: base64::DecodeError,
    },
    /// A value could not be written as JSON.
    #[error("tool `{tool}`: argument `{arg}` could not be encoded as JSON: {source}")]
    Json {
        /// Tool name.
        tool: &'static str,
        /// The argument.
        arg: String,
        /// The serialiser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The tool has no path template at all (a generator bug).
    #[error(
        "tool `{tool}` has no path template (this is a bug in the generated tool, not in the arguments)"
    )]
    NoRoutes {
        /// Tool name.
        tool: &'static str,
    },
    /// The tool's path template is malformed (a generator bug, not a caller
    /// error).
    #[error(
        "tool `{tool}`: path template `{template}` is malformed at placeholder `{arg}` (this is a bug in the generated tool, not in the arguments)"
    )]
    InvalidTemplate {
        /// Tool name.
        tool: &'static str,
        /// The placeholder text (argument name) where parsing failed.
        arg: String,
        /// The template.
        template: &'static str,
    },
}

/// Builds the upstream request for `tool` from its (schema-validated)
/// arguments.
///
/// # Errors
///
/// Returns a [`BuildError`] when no route matches, a required value is
/// missing, a value has the wrong shape, or a value would escape its place
/// (a path segment, a header line).
pub fn build_request(tool: &ToolDef, args: &Args) -> Result<HttpRequest, BuildError> {
    let mut request = build_path_request(tool, args)?;
    request.headers = header::headers(tool, args)?;
    request.body = match &tool.body {
        Some(def) => body::build(tool, def, args)?,
        None => None,
    };
    Ok(request)
}

/// The request of `tool` from its path and query parameters alone: no
/// header, cookie or body parameter is read or required, so the request
/// has no headers and no body. Code Mode's `api.request` starts from it
/// and adds the body the code sent.
pub fn build_path_request(tool: &ToolDef, args: &Args) -> Result<HttpRequest, BuildError> {
    let route = select_route(tool, args)?;
    let mut path_and_query = path::expand(tool, route.template, args)?;
    let query = query::serialise(tool, args)?;
    if !query.is_empty() {
        path_and_query.push('?');
        path_and_query.push_str(&query);
    }
    Ok(HttpRequest {
        method: tool.method,
        path_and_query,
        headers: Vec::new(),
        body: None,
        security: Some(tool.security),
        operation: Some(tool.operation_id),
    })
}

/// Picks the first route whose selector is unset or matches its argument.
fn select_route(tool: &ToolDef, args: &Args) -> Result<&'static Route, BuildError> {
    let mut selector = None;
    for route in tool.routes {
        match route.when {
            None => return Ok(route),
            Some((arg, want)) => {
                if args.get(arg).and_then(Value::as_str) == Some(want) {
                    return Ok(route);
                }
                selector.get_or_insert(arg);
            }
        }
    }
    let Some(arg) = selector else {
        return Err(BuildError::NoRoutes { tool: tool.name });
    };
    let allowed = tool
        .routes
        .iter()
        .filter_map(|r| {
            r.when
                .filter(|(a, _)| *a == arg)
                .map(|(_, v)| format!("\"{v}\""))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let got = match args.get(arg) {
        None | Some(Value::Null) => "missing".to_owned(),
        Some(Value::String(s)) => format!("\"{s}\""),
        Some(other) => kind(other).to_owned(),
    };
    Err(BuildError::NoRoute {
        tool: tool.name,
        arg: arg.to_owned(),
        got,
        allowed,
    })
}

/// Article plus JSON type of a value, for error messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An argument value present and not `null`.
pub(crate) fn present<'a>(args: &'a Args, arg: &str) -> Option<&'a Value> {
    args.get(arg).filter(|v| !v.is_null())
}

/// Text of a value used as one item of a serialised parameter: strings raw,
/// booleans and numbers as JSON, `null` empty, arrays and objects as compact
/// JSON text.
pub(crate) fn item_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(_) | Value::Object(_) => value.to_string(),
    }
}

/// A parameter value reduced to what the OpenAPI styles distinguish.
#[derive(Debug, PartialEq)]
pub(crate) enum Shape {
    /// A primitive, as text.
    Scalar(String),
    /// An array's items, as text.
    List(Vec<String>),
    /// An object's properties, as text.
    Pairs(Vec<(String, String)>),
}

impl Shape {
    /// Classifies a (non-null) value.
    pub(crate) fn of(value: &Value) -> Shape {
        match value {
            Value::Array(items) => Shape::List(items.iter().map(item_text).collect()),
            Value::Object(map) => {
                Shape::Pairs(map.iter().map(|(k, v)| (k.clone(), item_text(v))).collect())
            }
            other => Shape::Scalar(item_text(other)),
        }
    }

    /// The value has nothing in it (`""`, `[]` or `{}`).
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Shape::Scalar(s) => s.is_empty(),
            Shape::List(items) => items.is_empty(),
            Shape::Pairs(pairs) => pairs.is_empty(),
        }
    }
}

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    use super::testing::{args, tool};
    use super::*;
    use crate::catalogue::{ParamDef, ParamLocation, ParamStyle};
    use serde_json::json;

    static RULESET_ROUTES: [Route; 2] = [
        Route {
            when: Some(("account_or_zone", "accounts")),
            template: "/accounts/{account_or_zone_id}/rulesets",
        },
        Route {
            when: Some(("account_or_zone", "zones")),
            template: "/zones/{account_or_zone_id}/rulesets",
        },
    ];

    static RULESET_PARAMS: [ParamDef; 1] = [ParamDef {
        arg: "account_or_zone_id",
        name: "account_or_zone_id",
        location: ParamLocation::Path,
        style: ParamStyle::Simple,
        explode: false,
        required: true,
        allow_reserved: false,
    }];

    fn rulesets() -> &'static ToolDef {
        tool(
            "list_rulesets",
            Method::Get,
            &RULESET_ROUTES,
            &RULESET_PARAMS,
            None,
        )
    }

    #[test]
    fn merged_tool_routes_on_selector() {
        let t = rulesets();
        let a = build_request(
            t,
            &args(json!({"account_or_zone": "accounts", "account_or_zone_id": "abc"})),
        )
        .unwrap();
        assert_eq!(a.path_and_query, "/accounts/abc/rulesets");
        assert_eq!(a.method, Method::Get);
        let z = build_request(
            t,
            &args(json!({"account_or_zone": "zones", "account_or_zone_id": "z1"})),
        )
        .unwrap();
        assert_eq!(z.path_and_query, "/zones/z1/rulesets");
        assert_eq!(
            z.url("https://api.example.com/client/v4/"),
            "https://api.example.com/client/v4/zones/z1/rulesets"
        );
    }

    #[test]
    fn unmatched_selector_names_arg_and_allowed_values() {
        let t = rulesets();
        for (input, got) in [
            (
                json!({"account_or_zone": "users", "account_or_zone_id": "x"}),
                "\"users\"",
            ),
            (json!({"account_or_zone_id": "x"}), "missing"),
            (
                json!({"account_or_zone": 3, "account_or_zone_id": "x"}),
                "a number",
            ),
        ] {
            let err = build_request(t, &args(input)).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, BuildError::NoRoute { .. }), "{msg}");
            assert!(msg.contains("list_rulesets"), "{msg}");
            assert!(msg.contains("`account_or_zone`"), "{msg}");
            assert!(msg.contains("\"accounts\", \"zones\""), "{msg}");
            assert!(msg.contains(got), "{msg}");
        }
    }

    #[test]
    fn unconditional_route_wins_and_no_routes_is_an_error() {
        static ROUTES: [Route; 1] = [Route {
            when: None,
            template: "/user",
        }];
        let t = tool("me", Method::Get, &ROUTES, &[], None);
        let req = build_request(t, &Args::new()).unwrap();
        assert_eq!(req.path_and_query, "/user");
        assert!(req.headers.is_empty() && req.body.is_none());

        let none = tool("broken", Method::Get, &[], &[], None);
        let err = build_request(none, &Args::new()).unwrap_err();
        assert!(err.to_string().contains("broken"));
    }

    #[test]
    fn url_joins_base_without_double_slash() {
        let req = HttpRequest {
            method: Method::Get,
            path_and_query: "/a?b=1".into(),
            headers: vec![],
            body: None,
            security: None,
            operation: None,
        };
        assert_eq!(req.url("http://h"), "http://h/a?b=1");
        assert_eq!(req.url("http://h/v4//"), "http://h/v4/a?b=1");
    }

    #[test]
    fn shapes() {
        assert_eq!(Shape::of(&json!(1.5)), Shape::Scalar("1.5".into()));
        assert_eq!(Shape::of(&json!(true)), Shape::Scalar("true".into()));
        assert_eq!(
            Shape::of(&json!(["a", 2, null, [1]])),
            Shape::List(vec!["a".into(), "2".into(), String::new(), "[1]".into()])
        );
        assert_eq!(
            Shape::of(&json!({"k": {"x": 1}})),
            Shape::Pairs(vec![("k".into(), "{\"x\":1}".into())])
        );
        assert!(Shape::of(&json!({})).is_empty());
    }

    /// `api.request` sends the code's own body and headers: a required
    /// header, cookie or body of the operation is neither read nor asked for.
    #[test]
    fn the_path_request_reads_only_path_and_query() {
        use super::testing::{param, tool_at};
        use crate::catalogue::{BodyArgs, BodyDef, BodyKind};
        let required = |mut p: ParamDef| {
            p.required = true;
            p
        };
        let t = tool_at(
            "/items/{id}",
            vec![
                param("id", ParamLocation::Path, ParamStyle::Simple, false),
                required(param(
                    "X-Trace",
                    ParamLocation::Header,
                    ParamStyle::Simple,
                    false,
                )),
                param("q", ParamLocation::Query, ParamStyle::Form, true),
                required(param(
                    "session",
                    ParamLocation::Cookie,
                    ParamStyle::Form,
                    false,
                )),
            ],
            Some(BodyDef {
                content_type: "application/json",
                kind: BodyKind::Json,
                required: true,
                args: BodyArgs::Whole("body"),
                file_fields: &[],
                min_fields: 0,
            }),
        );
        let given = args(json!({"id": "7", "q": "x", "X-Trace": "t"}));
        let full = build_request(t, &given);
        assert!(matches!(full, Err(BuildError::Missing { .. })), "{full:?}");
        let req = build_path_request(t, &given).unwrap();
        assert_eq!(req.path_and_query, "/items/7?q=x");
        assert!(req.headers.is_empty());
        assert!(req.body.is_none());
        assert_eq!(req.operation, Some("t"));
    }
}
