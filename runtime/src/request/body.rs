//! Request bodies: JSON, form-urlencoded and raw (multipart lives in
//! [`super::multipart`]), plus the file-content shape shared with multipart.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value};

use super::encode::form;
use super::header::check_header_value;
use super::{Args, BuildError, RequestBody, item_text, kind, multipart, present};
use crate::catalogue::{BodyArgs, BodyDef, BodyKind, ToolDef};

/// The accepted shape of a file or raw body value, for error messages.
pub(crate) const FILE_SHAPE: &str = "a string, or an object {\"content\": string, \"encoding\"?: \"utf8\" | \"base64\", \"filename\"?: string, \"content_type\"?: string}";

const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
/// Standard base64, padding optional.
const BASE64: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
/// URL-safe base64, padding optional.
const BASE64_URL: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

/// One body property and the argument it came from (for error messages).
pub(crate) struct Field<'a> {
    /// Property name in the body.
    pub(crate) prop: &'a str,
    /// Argument name, `arg` or `arg.prop` for a whole-body object.
    pub(crate) arg: String,
    /// The value (never `null`).
    pub(crate) value: &'a Value,
}

/// Where the body value was found.
enum Source<'a> {
    /// Flattened properties present in the arguments.
    Fields(Vec<Field<'a>>),
    /// The whole body is one argument.
    Whole(&'static str, &'a Value),
}

/// Builds the body, or `None` when an optional body has nothing to send.
pub(crate) fn build(
    tool: &ToolDef,
    def: &BodyDef,
    args: &Args,
) -> Result<Option<RequestBody>, BuildError> {
    let source = match def.args {
        BodyArgs::Fields(pairs) => {
            let fields: Vec<Field<'_>> = pairs
                .iter()
                .filter_map(|&(arg, prop)| {
                    present(args, arg).map(|value| Field {
                        prop,
                        arg: arg.to_owned(),
                        value,
                    })
                })
                .collect();
            if fields.is_empty() && !def.required && def.min_fields == 0 {
                return Ok(None);
            }
            if fields.len() < def.min_fields as usize {
                return Err(BuildError::TooFewFields {
                    tool: tool.name,
                    args: pairs.iter().map(|&(arg, _)| arg).collect(),
                    min: def.min_fields,
                });
            }
            Source::Fields(fields)
        }
        BodyArgs::Whole(arg) => match present(args, arg) {
            Some(value) => Source::Whole(arg, value),
            None if def.required => {
                return Err(BuildError::Missing {
                    tool: tool.name,
                    arg: arg.to_owned(),
                    place: "request body".to_owned(),
                });
            }
            None => return Ok(None),
        },
    };
    let content_type = |default: &str| {
        if def.content_type.is_empty() {
            default.to_owned()
        } else {
            def.content_type.to_owned()
        }
    };
    let body = match def.kind {
        BodyKind::Json => RequestBody {
            content_type: content_type("application/json"),
            bytes: json_bytes(tool, &source)?,
        },
        BodyKind::Form => RequestBody {
            content_type: content_type("application/x-www-form-urlencoded"),
            bytes: form_bytes(&fields(tool, &source)?).into_bytes(),
        },
        BodyKind::Multipart => multipart::encode(tool, def, &fields(tool, &source)?)?,
        BodyKind::Raw => raw(tool, def, &source)?,
    };
    Ok(Some(body))
}

/// JSON text of the body.
fn json_bytes(tool: &ToolDef, source: &Source<'_>) -> Result<Vec<u8>, BuildError> {
    let (arg, result) = match source {
        Source::Fields(fields) => {
            let object: Map<String, Value> = fields
                .iter()
                .map(|f| (f.prop.to_owned(), f.value.clone()))
                .collect();
            let arg = fields
                .iter()
                .map(|f| f.arg.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            (arg, serde_json::to_vec(&object))
        }
        Source::Whole(arg, value) => ((*arg).to_owned(), serde_json::to_vec(value)),
    };
    result.map_err(|source| BuildError::Json {
        tool: tool.name,
        arg,
        source,
    })
}

/// The body as a list of properties; a whole-body argument must be an object.
fn fields<'a>(tool: &ToolDef, source: &Source<'a>) -> Result<Vec<Field<'a>>, BuildError> {
    match source {
        Source::Fields(fields) => Ok(fields
            .iter()
            .map(|f| Field {
                prop: f.prop,
                arg: f.arg.clone(),
                value: f.value,
            })
            .collect()),
        Source::Whole(arg, Value::Object(map)) => Ok(map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(prop, value)| Field {
                prop,
                arg: format!("{arg}.{prop}"),
                value,
            })
            .collect()),
        Source::Whole(arg, other) => Err(BuildError::WrongType {
            tool: tool.name,
            arg: (*arg).to_owned(),
            expected: "an object whose properties are the form fields",
            got: kind(other),
        }),
    }
}

/// `application/x-www-form-urlencoded`: arrays repeat the key, objects are
/// sent as JSON text, `null` items are skipped.
fn form_bytes(fields: &[Field<'_>]) -> String {
    let mut pairs = Vec::new();
    for field in fields {
        let key = form(field.prop);
        match field.value {
            Value::Array(items) => pairs.extend(
                items
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(|v| format!("{key}={}", form(&item_text(v)))),
            ),
            value => pairs.push(format!("{key}={}", form(&item_text(value)))),
        }
    }
    pairs.join("&")
}

/// A raw body: a string sent as UTF-8, or a file-content object. Flattened
/// fields (not produced for raw bodies by the generator) are sent as JSON.
fn raw(tool: &ToolDef, def: &BodyDef, source: &Source<'_>) -> Result<RequestBody, BuildError> {
    let wildcard = def.content_type.is_empty() || def.content_type.contains('*');
    let default_type = if wildcard {
        "application/octet-stream"
    } else {
        def.content_type
    };
    let (arg, value) = match source {
        Source::Fields(_) => {
            return Ok(RequestBody {
                content_type: default_type.to_owned(),
                bytes: json_bytes(tool, source)?,
            });
        }
        Source::Whole(arg, value) => (*arg, *value),
    };
    if !matches!(value, Value::String(_) | Value::Object(_)) {
        return Err(BuildError::WrongType {
            tool: tool.name,
            arg: arg.to_owned(),
            expected: FILE_SHAPE,
            got: kind(value),
        });
    }
    let file = file_content(tool, arg, value)?;
    // An explicit type only replaces a wildcard (`*/*`, `image/*`) from the spec.
    let content_type = match file.content_type {
        Some(explicit) if wildcard => explicit,
        _ => default_type.to_owned(),
    };
    check_header_value(tool, arg, "Content-Type", &content_type)?;
    Ok(RequestBody {
        content_type,
        bytes: file.bytes,
    })
}

/// A file value: its bytes plus the optional name and media type given.
#[derive(Debug)]
pub(crate) struct FileContent {
    /// Decoded content.
    pub(crate) bytes: Vec<u8>,
    /// `filename`, if given.
    pub(crate) filename: Option<String>,
    /// `content_type`, if given.
    pub(crate) content_type: Option<String>,
}

/// Reads a file value: a string (its UTF-8 bytes) or
/// `{content, encoding?, filename?, content_type?}`.
pub(crate) fn file_content(
    tool: &ToolDef,
    arg: &str,
    value: &Value,
) -> Result<FileContent, BuildError> {
    let map = match value {
        Value::String(text) => {
            return Ok(FileContent {
                bytes: text.as_bytes().to_vec(),
                filename: None,
                content_type: None,
            });
        }
        Value::Object(map) => map,
        other => {
            return Err(BuildError::WrongType {
                tool: tool.name,
                arg: arg.to_owned(),
                expected: FILE_SHAPE,
                got: kind(other),
            });
        }
    };
    let Some(content) = optional_string(tool, arg, map, "content")? else {
        return Err(BuildError::Missing {
            tool: tool.name,
            arg: format!("{arg}.content"),
            place: "file content".to_owned(),
        });
    };
    let encoding = optional_string(tool, arg, map, "encoding")?;
    let bytes = match encoding.map(str::to_ascii_lowercase).as_deref() {
        None | Some("utf8" | "utf-8") => content.as_bytes().to_vec(),
        Some("base64") => decode_base64(content).map_err(|source| BuildError::InvalidBase64 {
            tool: tool.name,
            arg: format!("{arg}.content"),
            source,
        })?,
        Some(_) => {
            return Err(BuildError::UnknownEncoding {
                tool: tool.name,
                arg: format!("{arg}.encoding"),
                got: encoding.unwrap_or_default().to_owned(),
            });
        }
    };
    Ok(FileContent {
        bytes,
        filename: optional_string(tool, arg, map, "filename")?.map(str::to_owned),
        content_type: optional_string(tool, arg, map, "content_type")?.map(str::to_owned),
    })
}

/// A string property of a file object; absent or `null` is `None`.
fn optional_string<'a>(
    tool: &ToolDef,
    arg: &str,
    map: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, BuildError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(BuildError::WrongType {
            tool: tool.name,
            arg: format!("{arg}.{key}"),
            expected: "a string",
            got: kind(other),
        }),
    }
}

/// Decodes standard or URL-safe base64, padding optional, ignoring ASCII
/// whitespace (line-wrapped input).
fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    BASE64
        .decode(&compact)
        .or_else(|first| BASE64_URL.decode(&compact).map_err(|_| first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::testing::{args, tool_at};
    use serde_json::json;

    fn def(kind: BodyKind, required: bool, args: BodyArgs) -> BodyDef {
        BodyDef {
            content_type: match kind {
                BodyKind::Json => "application/json",
                BodyKind::Form => "application/x-www-form-urlencoded",
                BodyKind::Multipart => "multipart/form-data",
                BodyKind::Raw => "text/plain",
            },
            kind,
            required,
            args,
            file_fields: &[],
            min_fields: 0,
        }
    }

    fn run(def: BodyDef, input: Value) -> Result<Option<RequestBody>, BuildError> {
        let t = tool_at("/b", vec![], Some(def));
        build(t, &def, &args(input))
    }

    const FIELDS: BodyArgs = BodyArgs::Fields(&[
        ("rule_name", "name"),
        ("enabled", "enabled"),
        ("tags", "tags"),
    ]);

    #[test]
    fn json_fields_map_args_to_properties() {
        let body = run(
            def(BodyKind::Json, false, FIELDS),
            json!({"rule_name": "r", "tags": ["a"], "enabled": null, "other": 1}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(body.content_type, "application/json");
        assert_eq!(
            String::from_utf8(body.bytes).unwrap(),
            r#"{"name":"r","tags":["a"]}"#
        );
    }

    #[test]
    fn empty_fields_send_braces_only_when_required() {
        let required = run(def(BodyKind::Json, true, FIELDS), json!({}))
            .unwrap()
            .unwrap();
        assert_eq!(required.bytes, b"{}");
        assert!(
            run(def(BodyKind::Json, false, FIELDS), json!({}))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn whole_argument_body() {
        let whole = BodyArgs::Whole("body");
        let body = run(
            def(BodyKind::Json, true, whole),
            json!({"body": [1, {"a": true}]}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(body.bytes, br#"[1,{"a":true}]"#);
        let err = run(def(BodyKind::Json, true, whole), json!({"body": null})).unwrap_err();
        assert!(matches!(err, BuildError::Missing { .. }));
        assert!(err.to_string().contains("`body`") && err.to_string().contains("request body"));
        assert!(
            run(def(BodyKind::Json, false, whole), json!({}))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn form_body_repeats_arrays_and_embeds_objects_as_json() {
        let body = run(
            def(BodyKind::Form, false, BodyArgs::Whole("form")),
            json!({"form": {"a b": "x y&z", "list": [1, null, "two"], "obj": {"k": 1}, "skip": null, "t": true}}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(body.content_type, "application/x-www-form-urlencoded");
        assert_eq!(
            String::from_utf8(body.bytes).unwrap(),
            "a+b=x+y%26z&list=1&list=two&obj=%7B%22k%22%3A1%7D&t=true"
        );
        let err = run(
            def(BodyKind::Form, false, BodyArgs::Whole("form")),
            json!({"form": "a=b"}),
        )
        .unwrap_err();
        assert!(matches!(err, BuildError::WrongType { .. }), "{err}");
        assert!(
            err.to_string().contains("`form` must be an object"),
            "{err}"
        );
    }

    #[test]
    fn raw_text_and_base64() {
        let raw = def(BodyKind::Raw, true, BodyArgs::Whole("script"));
        let body = run(raw, json!({"script": "export default {}"}))
            .unwrap()
            .unwrap();
        assert_eq!(
            (body.content_type.as_str(), body.bytes.as_slice()),
            ("text/plain", &b"export default {}"[..])
        );
        for encoded in ["AAEC/w==", "AAEC/w", "AAEC_w", "AAE\nC/w=="] {
            let body = run(
                raw,
                json!({"script": {"content": encoded, "encoding": "base64"}}),
            )
            .unwrap()
            .unwrap();
            assert_eq!(body.bytes, [0, 1, 2, 255], "{encoded}");
        }
        let body = run(raw, json!({"script": {"content": "é"}}))
            .unwrap()
            .unwrap();
        assert_eq!(body.bytes, "é".as_bytes());
    }

    #[test]
    fn raw_content_type_override_only_for_wildcards() {
        let mut wild = def(BodyKind::Raw, true, BodyArgs::Whole("file"));
        wild.content_type = "image/*";
        let input =
            json!({"file": {"content": "iVBO", "encoding": "base64", "content_type": "image/png"}});
        assert_eq!(
            run(wild, input.clone()).unwrap().unwrap().content_type,
            "image/png"
        );
        let fixed = def(BodyKind::Raw, true, BodyArgs::Whole("file"));
        assert_eq!(
            run(fixed, input).unwrap().unwrap().content_type,
            "text/plain"
        );
        let bad = json!({"file": {"content": "x", "content_type": "a/b\r\nX: y"}});
        assert!(matches!(
            run(wild, bad).unwrap_err(),
            BuildError::InvalidHeaderValue { .. }
        ));
    }

    #[test]
    fn raw_errors_name_the_argument() {
        let raw = def(BodyKind::Raw, true, BodyArgs::Whole("data"));
        let cases = [
            (json!({"data": 5}), "`data` must be a string, or an object"),
            (
                json!({"data": {"content": "!!", "encoding": "base64"}}),
                "`data.content` is not valid base64",
            ),
            (
                json!({"data": {"content": "x", "encoding": "hex"}}),
                "`data.encoding` has encoding `hex`",
            ),
            (
                json!({"data": {"encoding": "base64"}}),
                "`data.content` is missing",
            ),
            (
                json!({"data": {"content": 1}}),
                "`data.content` must be a string, but a number",
            ),
            (
                json!({"data": {"content": "x", "filename": []}}),
                "`data.filename` must be a string",
            ),
        ];
        for (input, want) in cases {
            let msg = run(raw, input).unwrap_err().to_string();
            assert!(msg.contains(want) && msg.contains("tool `t`"), "{msg}");
        }
    }
}
