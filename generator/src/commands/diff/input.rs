//! Inputs of a diff: an OpenAPI spec or a generated `tools.json`, told
//! apart by content (not by file name).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::DiffError;
use super::model::{InputKind, Release, ReleaseSkipped, ReleaseTool};
use crate::config::ForgeConfig;
use crate::emit::artifacts::{CHUNK_KEY, CHUNKED_KEY, CHUNKS_FILE_KEY};
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

/// Whether `name` is a plain file name (what a catalogue may name beside
/// itself: no directory, no parent, nothing hidden).
fn plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The table of shared schema texts a catalogue's `output_schema` names
/// refer to, and its reference key: the file beside it that the root's
/// [`CHUNKS_FILE_KEY`] names (read with `sibling`), or, in older
/// catalogues, its own `schemas` (chunked when [`CHUNKED_KEY`] is `true`,
/// else written whole).
fn shared_table(
    obj: &mut Map<String, Value>,
    sibling: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
) -> Result<(Map<String, Value>, Option<String>), String> {
    if let Some(file) = obj.get(CHUNKS_FILE_KEY) {
        let Some(name) = file.as_str().filter(|n| plain_file_name(n)) else {
            return Err(format!(
                "`{CHUNKS_FILE_KEY}` must name a file beside the catalogue, found {file}"
            ));
        };
        let bytes = sibling(name).ok_or_else(|| {
            format!(
                "its schemas are in `{name}` beside it, which could not be read (copy the whole `artifacts` directory)"
            )
        })?;
        let root: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{name}: not a schema table: {e}"))?;
        let key = root.get("key").and_then(Value::as_str).map(str::to_string);
        let Some(Value::Object(entries)) = root.get("entries") else {
            return Err(format!("{name}: not a schema table: no `entries` object"));
        };
        let Some(key) = key else {
            return Err(format!("{name}: not a schema table: no `key`"));
        };
        return Ok((entries.clone(), Some(key)));
    }
    let chunked = obj.get(CHUNKED_KEY) == Some(&Value::Bool(true));
    Ok(match obj.remove("schemas") {
        Some(Value::Object(m)) => (m, chunked.then(|| CHUNK_KEY.to_string())),
        _ => (Map::new(), None),
    })
}

/// Puts each tool's shared input and output schemas back: `input_schema`
/// and `output_schema` name entries of the catalogue's table of schema
/// texts (see [`shared_table`]), whose chunk references are put back;
/// older artifacts hold the schemas themselves, or the output's root
/// without `$defs` and an `output_defs` list naming each definition's
/// entry, appended as the last member. Names the first name or entry that
/// does not resolve.
fn unshare_output_defs(
    root: &mut Value,
    sibling: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
) -> Result<(), String> {
    let Some(obj) = root.as_object_mut() else {
        return Ok(());
    };
    let (table, key) = shared_table(obj, sibling)?;
    let mut expander = super::chunks::Expander::new(&table, key.as_deref());
    let Some(Value::Array(tools)) = obj.get_mut("tools") else {
        return Ok(());
    };
    for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
        for field in ["input_schema", "output_schema"] {
            if let Some(Value::String(name)) = tool.get(field) {
                if !table.contains_key(name) {
                    return Err(format!(
                        "{field} {name:?} names no schema of the catalogue's table"
                    ));
                }
                let body = expander.get(name)?;
                tool.insert(field.into(), body);
            }
        }
        let Some(list) = tool.remove("output_defs") else {
            continue;
        };
        let mut defs = Map::new();
        for pair in list.as_array().into_iter().flatten() {
            let entry = pair.get(0).and_then(Value::as_str).zip(
                pair.get(1)
                    .and_then(Value::as_str)
                    .filter(|s| table.contains_key(*s)),
            );
            let Some((name, entry)) = entry else {
                return Err(format!(
                    "output_defs entry {pair} names no schema of `schemas`"
                ));
            };
            defs.insert(name.to_string(), expander.get(entry)?);
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
    read_input_with(bytes, file, &mut |_| None)
}

/// [`read_input`] for a catalogue whose schema texts may be in a file
/// beside it: `sibling` returns the bytes of the file of that name next to
/// `file` (`None` when it cannot be read).
///
/// # Errors
/// As [`read_input`]; a catalogue that names a table `sibling` cannot
/// read is [`DiffError::Artifact`].
pub fn read_input_with(
    bytes: &[u8],
    file: &str,
    sibling: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
) -> Result<Input, DiffError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{')
        && let Ok(mut root) = serde_json::from_slice::<Value>(bytes)
        && looks_like_catalogue(&root)
    {
        unshare_output_defs(&mut root, sibling).map_err(|message| DiffError::Artifact {
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
    crate::lower::build_catalogue(doc, config)
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

    /// A catalogue whose schema texts are in `schemas.json` beside it.
    fn beside(output: &str) -> String {
        format!(
            r#"{{"api": "x", "x-toolforge-chunks": "schemas.json", "tools": [{{"name": "a_get",
            "method": "get", "path": "/a", "output_schema": {output},
            "annotations": {{"readOnlyHint": true, "destructiveHint": false,
                            "idempotentHint": true, "openWorldHint": true}}}}]}}"#
        )
    }

    /// The output schema read from `catalogue`, with `files` beside it.
    fn read_beside(catalogue: &str, files: &[(&str, &str)]) -> Result<Option<Value>, String> {
        let mut asked = Vec::new();
        let got = read_input_with(catalogue.as_bytes(), "tools.json", &mut |name| {
            asked.push(name.to_string());
            files
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, text)| text.as_bytes().to_vec())
        });
        match got {
            Ok(Input::Catalogue(r)) => Ok(r.tools[0].output_schema.clone()),
            Ok(Input::Spec(_)) => Err("read as a spec".to_string()),
            Err(e) => Err(format!("{e} (asked for {asked:?})")),
        }
    }

    #[test]
    fn schema_texts_beside_the_catalogue_are_read_with_their_key() {
        // The table names its key: a suffixed one, because some schema text
        // holds the usual key itself (as data, which stays as it is).
        let table = r#"{"@generated":"x","key":"x-toolforge-chunk-2","entries":{
"S_1":{"type":"object","properties":{"a":{"x-toolforge-chunk-2":"S_2"},"b":{"x-toolforge-chunk":"S_2"}}},
"S_2":{"type":"integer"}
}}
"#;
        let got = read_beside(&beside("\"S_1\""), &[("schemas.json", table)]).unwrap();
        let expected: Value = serde_json::from_str(
            r#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"x-toolforge-chunk":"S_2"}}}"#,
        )
        .unwrap();
        assert_eq!(got, Some(expected));
        // Without the file, the diff says where the schemas are.
        let err = read_beside(&beside("\"S_1\""), &[]).unwrap_err();
        assert!(err.contains("`schemas.json` beside it"), "{err}");
        // A name the table does not hold, and tables of the wrong shape.
        let err = read_beside(&beside("\"S_9\""), &[("schemas.json", table)]).unwrap_err();
        assert!(err.contains("\"S_9\" names no schema"), "{err}");
        for broken in [
            "[]",
            "{}",
            r#"{"key":"k"}"#,
            r#"{"entries":{}}"#,
            "not json",
        ] {
            let err = read_beside(&beside("\"S_1\""), &[("schemas.json", broken)]).unwrap_err();
            assert!(err.contains("not a schema table"), "{broken}: {err}");
        }
        // A loop in the table is an error, not a hang.
        let looping = r#"{"key":"k","entries":{
"S_1":{"a":{"k":"S_2"}},
"S_2":{"b":{"k":"S_1"}}
}}"#;
        let err = read_beside(&beside("\"S_1\""), &[("schemas.json", looping)]).unwrap_err();
        assert!(err.contains("refers to itself"), "{err}");
    }

    #[test]
    fn a_catalogue_names_only_a_file_beside_it() {
        for name in [
            "../schemas.json",
            "/etc/passwd",
            "sub/schemas.json",
            ".schemas.json",
            "",
            "..",
        ] {
            let catalogue = beside("\"S_1\"").replace("\"schemas.json\"", &format!("{name:?}"));
            let err = read_beside(&catalogue, &[(name, "{}")]).unwrap_err();
            assert!(err.contains("must name a file beside"), "{name}: {err}");
            assert!(err.ends_with("(asked for [])"), "{name}: {err}");
        }
        let err =
            read_beside(&beside("\"S_1\"").replace("\"schemas.json\"", "7"), &[]).unwrap_err();
        assert!(err.contains("must name a file beside"), "{err}");
    }

    #[test]
    fn unreadable_spec_is_a_generate_error() {
        let err = read_input(b"swagger: '2.0'\n", "old.yaml").unwrap_err();
        assert!(matches!(err, DiffError::Generate { .. }), "{err}");
        assert!(err.to_string().contains("Swagger 2.0"), "{err}");
    }
}
