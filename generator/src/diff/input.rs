//! Inputs of a diff: an OpenAPI spec or a generated `tools.json`, told
//! apart by content (not by file name).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::DiffError;
use super::model::{InputKind, Release, ReleaseSkipped, ReleaseTool};
use crate::config::ForgeConfig;
use crate::emit::artifacts::CHUNKED_KEY;
use crate::load::{self, Document};

/// One diff input after reading.
#[derive(Debug, Clone)]
pub enum Input {
    /// An OpenAPI document (not yet generated).
    Spec(Box<Document>),
    /// A generated tool catalogue.
    Catalogue(Release),
}

/// The shape of `artifacts/tools.json` as far as the diff reads it.
#[derive(Deserialize)]
struct Artifact {
    #[serde(default)]
    api: String,
    tools: Vec<ReleaseTool>,
    #[serde(default)]
    skipped: Vec<ReleaseSkipped>,
}

/// A JSON object with a `tools` array and no `openapi`/`swagger`/`paths`
/// field is a catalogue; everything else is read as a spec.
fn looks_like_catalogue(root: &Value) -> bool {
    let Some(obj) = root.as_object() else {
        return false;
    };
    obj.get("tools").is_some_and(Value::is_array)
        && !["openapi", "swagger", "paths"]
            .iter()
            .any(|k| obj.contains_key(*k))
}

/// Puts each tool's shared output schema back: `output_schema` names an
/// entry of the top-level `schemas`, whose chunk references are put back
/// when the root says it has them (see [`super::chunks`]); older
/// artifacts hold the schema itself, or its root without `$defs` and an
/// `output_defs` list naming each definition's entry, appended as the
/// last member. Names the first name or entry that does not resolve.
fn unshare_output_defs(root: &mut Value) -> Result<(), String> {
    let Some(obj) = root.as_object_mut() else {
        return Ok(());
    };
    let shared = match obj.remove("schemas") {
        Some(Value::Object(m)) if obj.get(CHUNKED_KEY) == Some(&Value::Bool(true)) => {
            super::chunks::expand(&m)?
        }
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let Some(Value::Array(tools)) = obj.get_mut("tools") else {
        return Ok(());
    };
    for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
        if let Some(Value::String(name)) = tool.get("output_schema") {
            let Some(body) = shared.get(name) else {
                return Err(format!(
                    "output_schema {name:?} names no schema of `schemas`"
                ));
            };
            tool.insert("output_schema".into(), body.clone());
        }
        let Some(list) = tool.remove("output_defs") else {
            continue;
        };
        let mut defs = Map::new();
        for pair in list.as_array().into_iter().flatten() {
            let entry = pair.get(0).and_then(Value::as_str).zip(
                pair.get(1)
                    .and_then(Value::as_str)
                    .and_then(|s| shared.get(s)),
            );
            let Some((name, body)) = entry else {
                return Err(format!(
                    "output_defs entry {pair} names no schema of `schemas`"
                ));
            };
            defs.insert(name.to_string(), body.clone());
        }
        if let Some(Value::Object(out)) = tool.get_mut("output_schema") {
            out.insert("$defs".into(), Value::Object(defs));
        }
    }
    Ok(())
}

/// Reads `bytes` (the content of `file`) as a catalogue or a spec.
///
/// # Errors
/// [`DiffError::Artifact`] for a catalogue with the wrong shape, and
/// [`DiffError::Generate`] when the bytes are not a readable spec.
pub fn read_input(bytes: &[u8], file: &str) -> Result<Input, DiffError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{')
        && let Ok(mut root) = serde_json::from_slice::<Value>(bytes)
        && looks_like_catalogue(&root)
    {
        unshare_output_defs(&mut root).map_err(|message| DiffError::Artifact {
            file: file.to_string(),
            message,
        })?;
        let artifact: Artifact = serde_json::from_value(root).map_err(|e| DiffError::Artifact {
            file: file.to_string(),
            message: e.to_string(),
        })?;
        let mut tools = artifact.tools;
        for t in &mut tools {
            t.method.make_ascii_uppercase();
        }
        let mut skipped = artifact.skipped;
        for s in &mut skipped {
            s.method.make_ascii_uppercase();
        }
        return Ok(Input::Catalogue(Release {
            api: artifact.api,
            label: file.to_string(),
            kind: InputKind::Catalogue,
            tools,
            skipped,
        }));
    }
    load::load(bytes, file)
        .map(|doc| Input::Spec(Box::new(doc)))
        .map_err(|source| DiffError::Generate {
            file: file.to_string(),
            source,
        })
}

/// Builds the catalogue of a loaded spec with the configuration's policy
/// and options (the pin's sha256 is not consulted) and returns its view.
///
/// # Errors
/// [`DiffError::Generate`] when the generator refuses the document.
pub fn load_document_release(
    doc: &Document,
    config: &ForgeConfig,
    label: &str,
) -> Result<Release, DiffError> {
    crate::build::build_catalogue(doc, config)
        .map(|cat| Release::from_catalogue(&cat, label, InputKind::Spec))
        .map_err(|source| DiffError::Generate {
            file: doc.file.clone(),
            source,
        })
}

/// Reads `bytes` (the content of `file`) and returns the release it
/// describes, generating specs in memory. The label is `file`.
///
/// # Errors
/// As [`read_input`] and [`load_document_release`].
pub fn load_release(bytes: &[u8], file: &str, config: &ForgeConfig) -> Result<Release, DiffError> {
    match read_input(bytes, file)? {
        Input::Catalogue(release) => Ok(release),
        Input::Spec(doc) => load_document_release(&doc, config, file),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogues_are_detected_by_content() {
        let cat = br#"{"api": "x", "tools": [{"name": "a_get", "method": "get", "path": "/a",
            "annotations": {"readOnlyHint": true, "destructiveHint": false,
                            "idempotentHint": true, "openWorldHint": true}}]}"#;
        let Input::Catalogue(r) = read_input(cat, "whatever.yaml").unwrap() else {
            panic!("not detected as a catalogue");
        };
        assert_eq!(r.tools[0].method, "GET");
        assert_eq!(r.kind, InputKind::Catalogue);

        let spec = br#"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}, "tools": []}"#;
        assert!(matches!(
            read_input(spec, "tools.json").unwrap(),
            Input::Spec(_)
        ));
    }

    #[test]
    fn malformed_catalogue_names_the_file() {
        let err = read_input(br#"{"tools": [{"name": 1}]}"#, "tools.json").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("tools.json: not a toolforge tools.json"),
            "{msg}"
        );
    }

    /// Shared output roots (this format) and inline ones (older artifacts,
    /// e.g. the committed catalogue of the previous release) read the same.
    #[test]
    fn shared_and_inline_output_schemas_read_the_same() {
        let tool = |output: &str, defs: &str| {
            format!(
                r#"{{"name": "a_get", "method": "get", "path": "/a", "output_schema": {output}{defs},
                "annotations": {{"readOnlyHint": true, "destructiveHint": false,
                                "idempotentHint": true, "openWorldHint": true}}}}"#
            )
        };
        let read = |text: String| match read_input(text.as_bytes(), "tools.json") {
            Ok(Input::Catalogue(r)) => Ok(r.tools[0].output_schema.clone()),
            Ok(Input::Spec(_)) => Err("read as a spec".to_string()),
            Err(e) => Err(e.to_string()),
        };
        let root = r##"{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}}}"##;
        let defs = r#", "output_defs": [["N", "S_2"]]"#;
        let shared = format!(
            r#"{{"schemas": {{"S_1": {root}, "S_2": {{"type": "integer"}}}}, "tools": [{}]}}"#,
            tool("\"S_1\"", defs)
        );
        let inline = format!(
            r#"{{"schemas": {{"S_2": {{"type": "integer"}}}}, "tools": [{}]}}"#,
            tool(root, defs)
        );
        let expected: Value = serde_json::from_str(
            r##"{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"integer"}}}"##,
        )
        .unwrap();
        assert_eq!(read(shared).unwrap(), Some(expected.clone()));
        assert_eq!(read(inline).unwrap(), Some(expected));
        let unknown = format!(r#"{{"schemas": {{}}, "tools": [{}]}}"#, tool("\"S_9\"", ""));
        let err = read(unknown).unwrap_err();
        assert!(err.contains("\"S_9\" names no schema"), "{err}");
    }

    #[test]
    fn unreadable_spec_is_a_generate_error() {
        let err = read_input(b"swagger: '2.0'\n", "old.yaml").unwrap_err();
        assert!(matches!(err, DiffError::Generate { .. }), "{err}");
        assert!(err.to_string().contains("Swagger 2.0"), "{err}");
    }
}
