//! `multipart/form-data` encoding (RFC 7578) with a deterministic boundary.

use serde_json::Value;

use super::body::{Field, file_content};
use super::header::check_header_value;
use super::{BuildError, RequestBody};
use crate::catalogue::{BodyDef, ToolDef};

/// One encoded part: its header lines (each ending in CRLF) and content.
struct Part {
    headers: String,
    body: Vec<u8>,
}

/// Encodes the fields as multipart parts. File fields (listed in
/// `def.file_fields`, by property name) take a file value or an array of
/// them; other strings become text parts and other values JSON parts.
pub(crate) fn encode(
    tool: &ToolDef,
    def: &BodyDef,
    fields: &[Field<'_>],
) -> Result<RequestBody, BuildError> {
    let mut parts = Vec::with_capacity(fields.len());
    for field in fields {
        if def.file_fields.contains(&field.prop) {
            match field.value {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate().filter(|(_, v)| !v.is_null()) {
                        parts.push(file_part(
                            tool,
                            field.prop,
                            &format!("{}[{i}]", field.arg),
                            item,
                        )?);
                    }
                }
                value => parts.push(file_part(tool, field.prop, &field.arg, value)?),
            }
            continue;
        }
        let disposition = format!(
            "Content-Disposition: form-data; name=\"{}\"\r\n",
            quote(field.prop)
        );
        parts.push(match field.value {
            Value::String(text) => Part {
                headers: disposition,
                body: text.as_bytes().to_vec(),
            },
            value => Part {
                headers: format!("{disposition}Content-Type: application/json\r\n"),
                body: serde_json::to_vec(value).map_err(|source| BuildError::Json {
                    tool: tool.name,
                    arg: field.arg.clone(),
                    source,
                })?,
            },
        });
    }
    let boundary = boundary(&parts);
    let mut bytes = Vec::new();
    for part in &parts {
        bytes.extend_from_slice(b"--");
        bytes.extend_from_slice(boundary.as_bytes());
        bytes.extend_from_slice(b"\r\n");
        bytes.extend_from_slice(part.headers.as_bytes());
        bytes.extend_from_slice(b"\r\n");
        bytes.extend_from_slice(&part.body);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"--");
    bytes.extend_from_slice(boundary.as_bytes());
    bytes.extend_from_slice(b"--\r\n");
    let base = if def.content_type.starts_with("multipart/") {
        def.content_type
    } else {
        "multipart/form-data"
    };
    Ok(RequestBody {
        content_type: format!("{base}; boundary={boundary}"),
        bytes,
    })
}

/// A file part; the filename defaults to the property name and the media
/// type to `application/octet-stream`.
fn file_part(tool: &ToolDef, prop: &str, arg: &str, value: &Value) -> Result<Part, BuildError> {
    let file = file_content(tool, arg, value)?;
    let filename = file.filename.as_deref().unwrap_or(prop);
    let content_type = file
        .content_type
        .as_deref()
        .unwrap_or("application/octet-stream");
    check_header_value(tool, arg, "Content-Type", content_type)?;
    Ok(Part {
        headers: format!(
            "Content-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {content_type}\r\n",
            quote(prop),
            quote(filename)
        ),
        body: file.bytes,
    })
}

/// Escapes a name or filename for a quoted header parameter the way
/// browsers do (WHATWG): `"` → `%22`, CR → `%0D`, LF → `%0A`.
fn quote(text: &str) -> String {
    text.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A boundary derived from a hash of the parts, re-hashed until it occurs in
/// none of them, so the same input always gives the same bytes.
fn boundary(parts: &[Part]) -> String {
    let mut hash = FNV_OFFSET;
    for part in parts {
        hash = fnv1a(hash, part.headers.as_bytes());
        hash = fnv1a(hash, &part.body);
    }
    loop {
        let candidate = format!("toolforge-{hash:016x}");
        let needle = candidate.as_bytes();
        let clash = parts
            .iter()
            .any(|p| contains(p.headers.as_bytes(), needle) || contains(&p.body, needle));
        if !clash {
            return candidate;
        }
        hash = fnv1a(hash ^ FNV_OFFSET, &hash.to_le_bytes());
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a, continuing from `hash` (stable across Rust versions,
/// unlike `DefaultHasher`).
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{BodyArgs, BodyKind, Method, Route};
    use crate::request::testing::{args, tool};
    use crate::request::{Args, build_request};
    use base64::Engine as _;
    use serde_json::json;

    /// A parsed part: (name, filename, content type, content).
    type Parsed = (String, Option<String>, Option<String>, Vec<u8>);

    /// A tiny multipart parser, enough to check our own output.
    fn parse(content_type: &str, body: &[u8]) -> Vec<Parsed> {
        let boundary = content_type.split_once("; boundary=").unwrap().1;
        let delimiter = format!("\r\n--{boundary}");
        // Prepend CRLF so every delimiter, including the first, looks alike.
        let mut data = b"\r\n".to_vec();
        data.extend_from_slice(body);
        let pieces = split(&data, delimiter.as_bytes());
        assert!(pieces[0].is_empty(), "preamble");
        assert_eq!(pieces.last().unwrap(), b"--\r\n", "epilogue");
        pieces[1..pieces.len() - 1]
            .iter()
            .map(|piece| {
                let piece = piece.strip_prefix(b"\r\n").unwrap();
                let end = piece.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
                let head = std::str::from_utf8(&piece[..end]).unwrap();
                let content = piece[end + 4..].to_vec();
                let mut name = None;
                let mut filename = None;
                let mut ctype = None;
                for line in head.split("\r\n") {
                    if let Some(rest) = line.strip_prefix("Content-Disposition: form-data; ") {
                        for param in rest.split("; ") {
                            let (k, v) = param.split_once('=').unwrap();
                            let v = v.trim_matches('"').to_owned();
                            match k {
                                "name" => name = Some(v),
                                "filename" => filename = Some(v),
                                _ => panic!("unexpected parameter {k}"),
                            }
                        }
                    } else if let Some(t) = line.strip_prefix("Content-Type: ") {
                        ctype = Some(t.to_owned());
                    } else {
                        panic!("unexpected header line {line:?}");
                    }
                }
                (name.unwrap(), filename, ctype, content)
            })
            .collect()
    }

    fn split(data: &[u8], delimiter: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i + delimiter.len() <= data.len() {
            if &data[i..i + delimiter.len()] == delimiter {
                out.push(data[start..i].to_vec());
                i += delimiter.len();
                start = i;
            } else {
                i += 1;
            }
        }
        out.push(data[start..].to_vec());
        out
    }

    static ROUTES: [Route; 1] = [Route {
        when: None,
        template: "/accounts/{account_id}/workers/scripts/{script_name}",
    }];

    fn upload_tool(args: BodyArgs) -> &'static ToolDef {
        let body = BodyDef {
            content_type: "multipart/form-data",
            kind: BodyKind::Multipart,
            required: true,
            args,
            file_fields: &["script", "assets"],
            min_fields: 0,
        };
        tool("upload", Method::Put, &ROUTES, &[], Some(body))
    }

    const FIELDS: BodyArgs = BodyArgs::Fields(&[
        ("metadata", "metadata"),
        ("script", "script"),
        ("note", "note"),
        ("assets", "assets"),
    ]);

    fn build(input: Value) -> Result<RequestBody, BuildError> {
        let t = upload_tool(FIELDS);
        let mut a: Args = args(json!({"account_id": "a1", "script_name": "w"}));
        a.extend(args(input));
        build_request(t, &a).map(|r| r.body.unwrap())
    }

    #[test]
    fn round_trip() {
        let binary: Vec<u8> = (0..=255).collect();
        let encoded = base64::engine::general_purpose::STANDARD.encode(&binary);
        let body = build(json!({
            "metadata": {"main_module": "w.js", "bindings": []},
            "script": "export default {}\r\n--not-a-boundary",
            "note": "plain \"text\"",
            "assets": [
                {"content": encoded, "encoding": "base64", "filename": "bin\"ary.dat", "content_type": "application/x-bin"},
                null,
                {"content": "hi"}
            ],
        }))
        .unwrap();
        assert!(
            body.content_type
                .starts_with("multipart/form-data; boundary=toolforge-")
        );
        let parts = parse(&body.content_type, &body.bytes);
        let expected: Vec<Parsed> = vec![
            (
                "metadata".into(),
                None,
                Some("application/json".into()),
                br#"{"main_module":"w.js","bindings":[]}"#.to_vec(),
            ),
            (
                "script".into(),
                Some("script".into()),
                Some("application/octet-stream".into()),
                b"export default {}\r\n--not-a-boundary".to_vec(),
            ),
            ("note".into(), None, None, b"plain \"text\"".to_vec()),
            (
                "assets".into(),
                Some("bin%22ary.dat".into()),
                Some("application/x-bin".into()),
                binary,
            ),
            (
                "assets".into(),
                Some("assets".into()),
                Some("application/octet-stream".into()),
                b"hi".to_vec(),
            ),
        ];
        assert_eq!(parts, expected);
    }

    #[test]
    fn boundary_is_deterministic_and_content_dependent() {
        let a = build(json!({"note": "x"})).unwrap();
        let b = build(json!({"note": "x"})).unwrap();
        let c = build(json!({"note": "y"})).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.content_type, c.content_type);
    }

    #[test]
    fn boundary_avoids_content() {
        // Put the boundary the hash would pick into the content itself.
        let first = Part {
            headers: String::new(),
            body: b"x".to_vec(),
        };
        let chosen = boundary(std::slice::from_ref(&first));
        let tricky = Part {
            headers: String::new(),
            body: chosen.clone().into_bytes(),
        };
        let again = boundary(&[tricky]);
        let tricky_body = chosen.as_bytes();
        assert!(!contains(tricky_body, again.as_bytes()));
        // And through a full build: the part holding the candidate still parses.
        let probe = build(json!({"note": "seed"})).unwrap();
        let candidate = probe
            .content_type
            .split_once("boundary=")
            .unwrap()
            .1
            .to_owned();
        let body = build(json!({"note": candidate})).unwrap();
        let parts = parse(&body.content_type, &body.bytes);
        assert_eq!(parts.len(), 1);
    }

    #[test]
    fn whole_object_body_and_errors() {
        let t = upload_tool(BodyArgs::Whole("form"));
        let base = json!({"account_id": "a", "script_name": "s"});
        let mut a = args(base.clone());
        a.insert(
            "form".into(),
            json!({"script": "code", "n": 3, "skip": null}),
        );
        let body = build_request(t, &a).unwrap().body.unwrap();
        let parts = parse(&body.content_type, &body.bytes);
        assert_eq!(parts.len(), 2);
        assert_eq!(
            parts[1],
            (
                "n".into(),
                None,
                Some("application/json".into()),
                b"3".to_vec()
            )
        );

        for (form, want) in [
            (
                json!({"script": 5}),
                "`form.script` must be a string, or an object",
            ),
            (
                json!({"script": {"content": "x", "content_type": "a\nb"}}),
                "`form.script` must be printable ASCII, without line breaks",
            ),
            (
                json!({"assets": [{"content": "%%", "encoding": "base64"}]}),
                "`form.assets[0].content` is not valid base64",
            ),
            (json!([1]), "`form` must be an object"),
        ] {
            let mut a = args(base.clone());
            a.insert("form".into(), form);
            let msg = build_request(t, &a).unwrap_err().to_string();
            assert!(msg.contains(want) && msg.contains("tool `upload`"), "{msg}");
        }
    }

    #[test]
    fn empty_required_multipart_is_well_formed() {
        let body = build(json!({})).unwrap();
        assert!(parse(&body.content_type, &body.bytes).is_empty());
    }
}
