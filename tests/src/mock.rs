//! Sending a request built by `toolforge_runtime::request::build_request` to
//! a mock server (Prism) and reading its verdict.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use toolforge_runtime::request::HttpRequest;

use crate::http::{self, HttpError, Response};

/// Bearer token sent to the mock (the spec's security scheme is bearer auth).
pub const TEST_TOKEN: &str = "test-token";

/// The wire request for a built request: `Authorization: Bearer test-token`,
/// the built headers in order, and `Content-Type` plus the body when there
/// is one.
pub fn wire_request(built: &HttpRequest) -> http::Request {
    let mut headers = vec![("Authorization".to_owned(), format!("Bearer {TEST_TOKEN}"))];
    headers.extend(built.headers.iter().cloned());
    if let Some(body) = &built.body {
        headers.push(("Content-Type".to_owned(), body.content_type.clone()));
    }
    http::Request {
        method: built.method.as_str().to_owned(),
        target: built.path_and_query.clone(),
        headers,
        body: built.body.as_ref().map(|b| b.bytes.clone()),
    }
}

/// Sends a built request to `addr`.
///
/// # Errors
///
/// Transport failures (see [`http::send`]).
pub fn send_built(
    addr: SocketAddr,
    built: &HttpRequest,
    timeout: Duration,
) -> Result<Response, HttpError> {
    http::send(addr, &wire_request(built), timeout)
}

/// Prism's verdict on a request: `Ok` for a 2xx answer without
/// `sl-violations`; otherwise the violations it listed (from the
/// `sl-violations` header, or the problem+json body), one per line.
///
/// # Errors
///
/// The text explaining the rejection.
pub fn prism_verdict(response: &Response) -> Result<(), String> {
    let violations = response.header("sl-violations").map(describe_violations);
    let success = (200..300).contains(&response.status);
    match (success, violations) {
        (true, None) => Ok(()),
        (true, Some(v)) => Err(format!(
            "HTTP {} but Prism reported violations:\n{v}",
            response.status
        )),
        (false, Some(v)) => Err(format!("HTTP {}, violations:\n{v}", response.status)),
        (false, None) => {
            let text = response.text();
            let detail = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|body| problem_detail(&body))
                .unwrap_or_else(|| clip(&text, 600));
            Err(format!("HTTP {}: {detail}", response.status))
        }
    }
}

/// Readable lines from an `sl-violations` header (a JSON array of
/// `{location, severity, code, message}`).
pub fn describe_violations(header: &str) -> String {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(header) else {
        return format!("  - {header}");
    };
    items
        .iter()
        .map(|v| {
            let location = v["location"]
                .as_array()
                .map(|l| {
                    l.iter()
                        .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_owned))
                        .collect::<Vec<_>>()
                        .join(".")
                })
                .unwrap_or_default();
            let severity = v["severity"].as_str().unwrap_or("?");
            let message = v["message"].as_str().unwrap_or("?");
            format!("  - [{severity}] {location}: {message}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One entry of Prism's `sl-violations` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where: `["request", "body", "metadata"]` and the like.
    pub location: Vec<String>,
    /// `Error` or `Warning`.
    pub severity: String,
    /// Validator keyword or HTTP code, e.g. `type`, `422`.
    pub code: String,
    /// Prism's message.
    pub message: String,
}

/// The parsed `sl-violations` header of a response (empty when absent or
/// unreadable).
pub fn violations(response: &Response) -> Vec<Violation> {
    let Some(header) = response.header("sl-violations") else {
        return Vec::new();
    };
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(header) else {
        return Vec::new();
    };
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    items
        .iter()
        .map(|v| Violation {
            location: v["location"]
                .as_array()
                .map(|l| l.iter().map(text).collect())
                .unwrap_or_default(),
            severity: text(&v["severity"]),
            code: text(&v["code"]),
            message: text(&v["message"]),
        })
        .collect()
}

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The `name` of its `Content-Disposition`.
    pub name: String,
    /// The `filename`, when given.
    pub filename: Option<String>,
    /// Its `Content-Type`, when given.
    pub content_type: Option<String>,
    /// Its content.
    pub data: Vec<u8>,
}

/// Splits a `multipart/form-data` body (RFC 7578) into its parts.
///
/// # Errors
///
/// No boundary in `content_type`, or a body that does not follow it.
pub fn multipart_parts(content_type: &str, body: &[u8]) -> Result<Vec<Part>, String> {
    let boundary = content_type
        .split(';')
        .filter_map(|p| p.trim().strip_prefix("boundary="))
        .next()
        .map(|b| b.trim_matches('"').to_owned())
        .ok_or_else(|| format!("no boundary in {content_type:?}"))?;
    let delimiter = format!("--{boundary}").into_bytes();
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let mut rest = body;
    let start = find(rest, &delimiter).ok_or("the body has no boundary line")?;
    rest = &rest[start + delimiter.len()..];
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or("a boundary line is not followed by CRLF")?;
        let head_end = find(rest, b"\r\n\r\n").ok_or("a part has no end of headers")?;
        let head = String::from_utf8_lossy(&rest[..head_end]).into_owned();
        rest = &rest[head_end + 4..];
        let mut close = b"\r\n".to_vec();
        close.extend_from_slice(&delimiter);
        let end = find(rest, &close).ok_or("a part is not closed by the boundary")?;
        let data = rest[..end].to_vec();
        rest = &rest[end + close.len()..];
        let mut part = Part {
            name: String::new(),
            filename: None,
            content_type: None,
            data,
        };
        for line in head.split("\r\n") {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            if key.trim().eq_ignore_ascii_case("content-type") {
                part.content_type = Some(value.trim().to_owned());
            } else if key.trim().eq_ignore_ascii_case("content-disposition") {
                for param in value.split(';').skip(1) {
                    let Some((k, v)) = param.trim().split_once('=') else {
                        continue;
                    };
                    let v = v.trim().trim_matches('"').to_owned();
                    match k.trim() {
                        "name" => part.name = v,
                        "filename" => part.filename = Some(v),
                        _ => {}
                    }
                }
            }
        }
        parts.push(part);
    }
}

/// `title` / `detail` (and `validation` entries) of a problem+json body.
fn problem_detail(body: &Value) -> Option<String> {
    let title = body.get("title")?.as_str()?;
    let mut out = title.to_owned();
    if let Some(detail) = body.get("detail").and_then(Value::as_str) {
        out.push_str(": ");
        out.push_str(detail);
    }
    if let Some(items) = body.get("validation").and_then(Value::as_array) {
        for item in items {
            out.push_str(&format!("\n  - {item}"));
        }
    }
    Some(out)
}

/// A readable one-request summary for failure reports (body clipped).
pub fn describe_request(request: &http::Request) -> String {
    let mut out = format!("{} {}", request.method, request.target);
    for (name, value) in &request.headers {
        out.push_str(&format!("\n    {name}: {value}"));
    }
    if let Some(body) = &request.body {
        out.push_str(&format!(
            "\n    body ({} bytes): {}",
            body.len(),
            clip(&String::from_utf8_lossy(body), 800)
        ));
    }
    out
}

/// At most `max` characters of `text`, with a marker when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}… [{} more chars]", text.chars().count() - max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
        Response {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn verdicts() {
        assert!(prism_verdict(&response(200, &[], "{}")).is_ok());
        assert!(prism_verdict(&response(204, &[], "")).is_ok());
        let header = r#"[{"location":["request","query","per_page"],"severity":"Error","code":"type","message":"must be number"}]"#;
        let err = prism_verdict(&response(422, &[("sl-violations", header)], "{}")).unwrap_err();
        assert!(
            err.contains("HTTP 422") && err.contains("request.query.per_page: must be number"),
            "{err}"
        );
        let problem = r#"{"type":"x","title":"Route not resolved, no path matched","status":404,"detail":"The route /a hasn't been found"}"#;
        let err = prism_verdict(&response(404, &[], problem)).unwrap_err();
        assert!(
            err.contains("no path matched") && err.contains("/a"),
            "{err}"
        );
        let err = prism_verdict(&response(200, &[("SL-Violations", header)], "{}")).unwrap_err();
        assert!(err.contains("violations"), "{err}");
        let v = violations(&response(422, &[("sl-violations", header)], ""));
        assert_eq!(v[0].location, ["request", "query", "per_page"]);
        assert_eq!(
            (v[0].code.as_str(), v[0].severity.as_str()),
            ("type", "Error")
        );
    }

    #[test]
    fn multipart_bodies_split_into_parts() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"metadata\"\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\r\n--XyZ\r\nContent-Disposition: form-data; name=\"files\"; filename=\"w.js\"\r\n\r\nline1\r\nline2\r\n--XyZ--\r\n";
        let parts = multipart_parts("multipart/form-data; boundary=\"XyZ\"", body).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(
            (parts[0].name.as_str(), parts[0].content_type.as_deref()),
            ("metadata", Some("application/json"))
        );
        assert_eq!(parts[0].data, b"{\"a\":1}");
        assert_eq!(
            (parts[1].name.as_str(), parts[1].filename.as_deref()),
            ("files", Some("w.js"))
        );
        assert_eq!(parts[1].data, b"line1\r\nline2");
        assert!(multipart_parts("multipart/form-data", body).is_err());
        assert!(multipart_parts("multipart/form-data; boundary=other", body).is_err());
    }
}
