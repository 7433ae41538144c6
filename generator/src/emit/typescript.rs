//! TypeScript declarations of tools for the `code` mode: the `code` tool's
//! description declares each selected tool as a typed function
//! (`codemode.dns_records_list(args)`), so the model writes calls that
//! type-check against the real schemas.

use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};

use super::output_texts::{KeptTypes, OutputText, OutputTexts, reach};
use crate::error::{GenerateError, Result};
use crate::ir::{Catalogue, OutputSchema, Tool};
use crate::schema::{SharedView, inline_shared};

/// Deepest nesting rendered as a structural type; deeper parts become `any`.
const MAX_DEPTH: usize = 4;
/// Most enum members listed before falling back to the base type.
const MAX_ENUM: usize = 12;

fn is_ident(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Appends `name` as an object type's key: as it is when it is an
/// identifier, else quoted.
fn push_key(out: &mut String, name: &str) {
    if is_ident(name) {
        out.push_str(name);
    } else {
        out.push_str(&serde_json::to_string(name).unwrap_or_else(|_| "\"?\"".into()));
    }
}

fn literal(v: &Value) -> String {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => v.to_string(),
        _ => "any".into(),
    }
}

fn union(parts: Vec<String>) -> String {
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.iter().any(|p| p == "any") {
        return "any".into();
    }
    match out.len() {
        0 => "never".into(),
        1 => out.remove(0),
        _ => out.join(" | "),
    }
}

/// Renders a JSON Schema as a TypeScript type.
#[cfg(any(test, feature = "oracles"))]
pub fn ts_type(schema: &Value, depth: usize) -> String {
    ts(schema, depth, &Reader::new(&SharedView::none()), 0)
}

/// A [`SharedView`] being rendered, with the types of the definitions it
/// expanded: one definition stands in many places of a declaration
/// (Stripe's expandable fields), each rendered once per depth.
struct Reader<'v, 'a> {
    view: &'v SharedView<'a>,
    /// By the definition's address (it outlives the reader), depth and
    /// expansions done.
    expanded: std::cell::RefCell<HashMap<(usize, usize, usize), String>>,
}

impl<'v, 'a> Reader<'v, 'a> {
    fn new(view: &'v SharedView<'a>) -> Self {
        Reader {
            view,
            expanded: std::cell::RefCell::default(),
        }
    }
}

/// The keywords of a schema object the renderer reads, found in one pass
/// over its entries (an object has a handful; `Map::get` hashes the key
/// for each of a dozen lookups).
#[derive(Default)]
struct Keywords<'a> {
    reference: Option<&'a Value>,
    enumeration: Option<&'a Value>,
    constant: Option<&'a Value>,
    any_of: Option<&'a Value>,
    one_of: Option<&'a Value>,
    all_of: Option<&'a Value>,
    ty: Option<&'a Value>,
    items: Option<&'a Value>,
    properties: Option<&'a Value>,
    additional: Option<&'a Value>,
    required: Option<&'a Value>,
}

impl<'a> Keywords<'a> {
    fn of(s: &'a Map<String, Value>) -> Self {
        let mut k = Keywords::default();
        for (key, value) in s {
            let slot = match key.as_str() {
                "$ref" => &mut k.reference,
                "enum" => &mut k.enumeration,
                "const" => &mut k.constant,
                "anyOf" => &mut k.any_of,
                "oneOf" => &mut k.one_of,
                "allOf" => &mut k.all_of,
                "type" => &mut k.ty,
                "items" => &mut k.items,
                "properties" => &mut k.properties,
                "additionalProperties" => &mut k.additional,
                "required" => &mut k.required,
                _ => continue,
            };
            *slot = Some(value);
        }
        k
    }
}

/// [`ts_type`] of `schema` read through `reader`'s view, as if its shared
/// definitions were inlined (`expansions` already done on this path).
fn ts<'a>(schema: &'a Value, depth: usize, reader: &Reader<'_, 'a>, expansions: usize) -> String {
    let Value::Object(s) = schema else {
        return if schema == &Value::Bool(false) {
            "never".into()
        } else {
            "any".into()
        };
    };
    if let Some(body) = reader.view.expansion(s, expansions) {
        let key = (std::ptr::from_ref(body) as usize, depth, expansions + 1);
        if let Some(done) = reader.expanded.borrow().get(&key) {
            return done.clone();
        }
        let ty = ts(body, depth, reader, expansions + 1);
        reader.expanded.borrow_mut().insert(key, ty.clone());
        return ty;
    }
    let k = Keywords::of(s);
    if let Some(r) = k.reference.and_then(Value::as_str) {
        return r.rsplit('/').next().map_or("any".into(), type_name);
    }
    if let Some(Value::Array(values)) = k.enumeration
        && values.len() <= MAX_ENUM
    {
        return union(values.iter().map(literal).collect());
    }
    if let Some(c) = k.constant {
        return literal(c);
    }
    if depth > MAX_DEPTH {
        return "any".into();
    }
    for comb in [k.any_of, k.one_of] {
        if let Some(Value::Array(members)) = comb {
            return union(
                members
                    .iter()
                    .map(|m| ts(m, depth + 1, reader, expansions))
                    .collect(),
            );
        }
    }
    if let Some(Value::Array(members)) = k.all_of {
        // `&` binds tighter than `|`: a union member keeps its parentheses.
        let parts: Vec<String> = members
            .iter()
            .map(|m| ts(m, depth + 1, reader, expansions))
            .filter(|t| t != "any")
            .map(|t| {
                if top_level_union(&t) {
                    format!("({t})")
                } else {
                    t
                }
            })
            .collect();
        return if parts.is_empty() {
            "any".into()
        } else {
            parts.join(" & ")
        };
    }
    by_type(&k, k.ty, depth, reader, expansions)
}

/// The type of schema object `s` read as having type `ty` (each member of
/// a type list is read in turn as the schema's only type).
fn by_type<'a>(
    s: &Keywords<'a>,
    ty: Option<&'a Value>,
    depth: usize,
    reader: &Reader<'_, 'a>,
    expansions: usize,
) -> String {
    match ty {
        Some(Value::Array(types)) => union(
            types
                .iter()
                .map(|t| by_type(s, Some(t), depth, reader, expansions))
                .collect(),
        ),
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = s
                    .items
                    .map_or("any".into(), |i| ts(i, depth + 1, reader, expansions));
                if item.contains(' ') {
                    format!("Array<{item}>")
                } else {
                    format!("{item}[]")
                }
            }
            "object" => object_type(s, depth, reader, expansions),
            _ => "any".into(),
        },
        _ if s.properties.is_some() => object_type(s, depth, reader, expansions),
        _ => "any".into(),
    }
}

/// Whether `t` is a union at its top level (a `|` outside braces,
/// brackets, parentheses, angle brackets and string literals).
fn top_level_union(t: &str) -> bool {
    let mut depth = 0i32;
    let mut in_string = false;
    let mut escaped = false;
    for c in t.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' | '(' | '<' => depth += 1,
            '}' | ']' | ')' | '>' => depth -= 1,
            '|' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

fn object_type<'a>(
    s: &Keywords<'a>,
    depth: usize,
    reader: &Reader<'_, 'a>,
    expansions: usize,
) -> String {
    let required: Vec<&str> = s
        .required
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let props = s.properties.and_then(Value::as_object);
    // Written into one string: a `format!` per field and a join copied
    // every nested type twice more on each level.
    let mut out = String::from("{ ");
    let mut fields = 0usize;
    for (k, v) in props.into_iter().flatten() {
        if fields > 0 {
            out.push_str("; ");
        }
        push_key(&mut out, k);
        if !required.contains(&k.as_str()) {
            out.push('?');
        }
        out.push_str(": ");
        out.push_str(&ts(v, depth + 1, reader, expansions));
        fields += 1;
    }
    match s.additional {
        Some(Value::Bool(false)) => {}
        Some(extra @ Value::Object(_)) => {
            if fields > 0 {
                out.push_str("; ");
            }
            out.push_str("[key: string]: ");
            out.push_str(&ts(extra, depth + 1, reader, expansions));
        }
        _ if fields == 0 => return "Record<string, any>".into(),
        _ => {}
    }
    out.push_str(" }");
    out
}

/// A TypeScript type name for a `$defs` entry.
pub fn type_name(def: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in def.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(if upper { c.to_ascii_uppercase() } else { c });
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

fn doc_line(text: &str) -> String {
    let first = text
        .split("\n\n")
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut clipped: String = first.chars().take(160).collect();
    if clipped.len() < first.len() {
        clipped.push('…');
    }
    clipped.replace("*/", "* /")
}

/// The TypeScript declaration of an output schema: the alias line of each
/// definition it names as a type, and its type. Tools that share an output
/// schema share this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputDeclaration {
    /// `(definition name, "type Name = …;")` in `$defs` order.
    pub aliases: Vec<(String, String)>,
    /// The output's TypeScript type.
    pub ty: String,
}

/// The declaration of `output`, read from its shared text as its unshared
/// schema read: the definitions the lowering found kept before sharing
/// (`OutputSchema::declared_defs`) are named, every other is read in
/// place.
///
/// # Errors
/// When the text is not JSON (it always is when built by the generator).
pub fn output_declaration(output: &OutputSchema) -> Result<OutputDeclaration> {
    let read = OutputTexts::read(&[output.text.as_str()]).map_err(not_json)?;
    let first = read.outputs.first().ok_or_else(|| {
        GenerateError::emit("src/schemas.rs", "an output schema text gave no schema")
    })?;
    let cache = KeptTypes::default();
    read_declaration(first, &read, &output.declared_defs, &cache)
}

fn not_json(e: serde_json::Error) -> GenerateError {
    GenerateError::emit_from("src/schemas.rs", "an output schema text is not JSON", e)
}

/// The declaration of `schema` naming the root `$defs` entries in `kept`.
#[cfg(test)]
fn declared(schema: &Value, kept: &[(String, bool)]) -> OutputDeclaration {
    let view = SharedView::keeping(schema, kept);
    let reader = Reader::new(&view);
    OutputDeclaration {
        aliases: view
            .kept
            .iter()
            .map(|&(k, v)| (k.to_string(), alias(k, &ts(v, 1, &reader, 0))))
            .collect(),
        ty: ts(schema, 1, &reader, 0),
    }
}

/// [`output_declaration`] of a read output text, its definitions' bodies
/// and their references in `read`, the types of kept definitions kept in
/// `cache`.
///
/// # Errors
/// When the root's text is not JSON.
fn read_declaration(
    output: &OutputText<'_>,
    read: &OutputTexts<'_>,
    declared_defs: &[(String, bool)],
    cache: &KeptTypes,
) -> Result<OutputDeclaration> {
    let root = output.root().map_err(not_json)?;
    let bodies = &read.bodies;
    let defs = output
        .defs
        .iter()
        .filter_map(|(k, i)| Some((k.as_str(), bodies.get(*i)?)));
    let view = SharedView::keeping_defs(defs, declared_defs);
    let reader = Reader::new(&view);
    let stays = |k: &str| declared_defs.iter().any(|(n, in_place)| n == k && !in_place);
    let by_name: HashMap<&str, Option<usize>> = output
        .defs
        .iter()
        .map(|(k, i)| (k.as_str(), (!stays(k)).then_some(*i)))
        .collect();
    let index = |k: &str| output.defs.iter().find(|(n, _)| n == k).map(|(_, i)| *i);
    let aliases = view
        .kept
        .iter()
        .map(|&(k, v)| {
            let key = index(k).map(|i| (i, reach(i, &by_name, &read.refs)));
            let known = key.as_ref().and_then(|key| cache.lock().get(key).cloned());
            let ty = known.unwrap_or_else(|| {
                let ty: Arc<str> = Arc::from(ts(v, 1, &reader, 0));
                if let Some(key) = key {
                    cache.lock().insert(key, Arc::clone(&ty));
                }
                ty
            });
            (k.to_string(), alias(k, &ty))
        })
        .collect();
    Ok(OutputDeclaration {
        aliases,
        ty: ts(&root, 1, &reader, 0),
    })
}

/// The declaration of an unshared schema, as the lowering's choice of
/// kept definitions and this pass make it together.
#[cfg(test)]
pub(crate) fn declaration_of(schema: &Value) -> OutputDeclaration {
    declared(schema, &crate::schema::kept_defs(schema, &[]))
}

/// The declarations of a catalogue's distinct output schemas, made once
/// each (tools share an output by its `Arc`), in parallel, each distinct
/// definition body parsed once and each kept definition's type rendered
/// once per set of bodies read in place (see [`OutputTexts`],
/// [`KeptTypes`]).
#[derive(Debug, Default)]
pub struct OutputDeclarations(HashMap<usize, OutputDeclaration>);

impl OutputDeclarations {
    /// Declares every output schema of `cat`.
    ///
    /// # Errors
    /// When an output text is not JSON.
    pub fn build(cat: &Catalogue) -> Result<Self> {
        let mut seen: HashMap<usize, &OutputSchema> = HashMap::default();
        for tool in cat.products.iter().flat_map(|p| &p.tools) {
            if let Some(output) = &tool.output_schema {
                seen.entry(key(output)).or_insert(output);
            }
        }
        let outputs: Vec<(usize, &OutputSchema)> = seen.into_iter().collect();
        let texts: Vec<&str> = outputs.iter().map(|(_, o)| o.text.as_str()).collect();
        let read = OutputTexts::read(&texts).map_err(not_json)?;
        let cache = KeptTypes::default();
        let made = outputs
            .par_iter()
            .zip(read.outputs.par_iter())
            .map(|(&(k, output), text)| {
                let declared = &output.declared_defs;
                Ok((k, read_declaration(text, &read, declared, &cache)?))
            })
            .collect::<Result<_>>()?;
        Ok(OutputDeclarations(made))
    }

    /// The declaration of `tool`'s output, if it has one.
    pub fn of(&self, tool: &Tool) -> Option<&OutputDeclaration> {
        self.0.get(&key(tool.output_schema.as_ref()?))
    }
}

/// The root `$defs` entries of `schema`, in order.
fn defs_of(schema: &Value) -> Vec<(&str, &Value)> {
    match schema.get("$defs") {
        Some(Value::Object(defs)) => defs.iter().map(|(k, v)| (k.as_str(), v)).collect(),
        _ => Vec::new(),
    }
}

/// An output schema's identity: tools share one `Arc`.
fn key(output: &Arc<OutputSchema>) -> usize {
    Arc::as_ptr(output) as usize
}

/// `type Name = <ty>;` for definition `def`.
fn alias(def: &str, ty: &str) -> String {
    format!("type {} = {ty};", type_name(def))
}

/// One tool's declaration: the type aliases of its `$defs` (one per line,
/// so a consumer can de-duplicate them across tools), then the method.
/// Schemas are read with shared subschemas inlined again (through a
/// [`SharedView`]): only recursive `$defs` become named types, whose names
/// mean the same in every tool (shared definitions are named per tool).
///
/// # Errors
/// When the output text is not JSON.
pub fn tool_declaration(t: &Tool) -> Result<String> {
    let output = t
        .output_schema
        .as_deref()
        .map(output_declaration)
        .transpose()?;
    Ok(tool_declaration_parts(t, output.as_ref()).concat())
}

/// [`tool_declaration`] in the parts tools may share: each alias line
/// (with its newline), the method's doc line and head up to `Promise<`,
/// the output type, and the closing `>;`. The output's part is `output`,
/// its declaration (see [`OutputDeclarations`]).
pub fn tool_declaration_parts(t: &Tool, output: Option<&OutputDeclaration>) -> Vec<String> {
    let mut parts = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let inlined;
    let (input_schema, view, input_defs) = match SharedView::new(&t.input_schema) {
        Some(view) => {
            let defs = view.kept.clone();
            (&t.input_schema, view, defs)
        }
        None => {
            inlined = inline_shared(&t.input_schema);
            let defs = defs_of(&inlined);
            (&*inlined, SharedView::none(), defs)
        }
    };
    let reader = Reader::new(&view);
    for (k, v) in input_defs {
        if !seen.contains(&k) {
            seen.push(k);
            let mut line = alias(k, &ts(v, 1, &reader, 0));
            line.push('\n');
            parts.push(line);
        }
    }
    for (k, alias) in output.iter().flat_map(|o| &o.aliases) {
        if !seen.contains(&k.as_str()) {
            seen.push(k);
            parts.push(format!("{alias}\n"));
        }
    }
    let input = ts(input_schema, 0, &reader, 0);
    let output = output.map_or("unknown", |o| o.ty.as_str());
    parts.push(format!(
        "/** {} ({} {}) */\n{}(args: {input}): Promise<",
        doc_line(&t.description),
        t.method.as_str(),
        t.path,
        t.name
    ));
    parts.push(output.to_string());
    parts.push(">;".to_string());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::share_repeated;
    use serde_json::json;

    #[test]
    fn renders_types() {
        let s = json!({"type": "object", "required": ["a"], "properties": {
            "a": {"type": "string"}, "b": {"type": ["integer", "null"]},
            "c": {"enum": ["x", "y"]}, "d": {"type": "array", "items": {"$ref": "#/$defs/node_x"}},
            "e-f": {"anyOf": [{"type": "boolean"}, {"type": "object"}]}
        }, "additionalProperties": false});
        assert_eq!(
            ts_type(&s, 0),
            "{ a: string; b?: number | null; c?: \"x\" | \"y\"; d?: NodeX[]; \"e-f\"?: boolean | Record<string, any> }"
        );
    }

    #[test]
    fn unions_inside_intersections_keep_their_grouping() {
        let s = json!({"allOf": [
            {"type": "object", "properties": {"name": {"type": "string"}}},
            {"oneOf": [{"type": "object", "properties": {"a": {"type": "number"}}}, {"type": "null"}]}
        ]});
        assert_eq!(
            ts_type(&s, 0),
            "{ name?: string } & ({ a?: number } | null)"
        );
        assert!(!top_level_union("{ a?: string | null }"));
        assert!(!top_level_union("\"a|b\""));
        assert!(top_level_union("\"a\" | \"b\""));
    }

    #[test]
    fn deep_schemas_stop() {
        let mut s = json!({"type": "string"});
        for _ in 0..20 {
            s = json!({"type": "object", "properties": {"x": s}});
        }
        assert!(ts_type(&s, 0).contains("any"));
    }

    /// The declaration parts as made before [`SharedView`]: the schema
    /// inlined first, then rendered.
    fn eager(schema: &Value) -> OutputDeclaration {
        let inlined = inline_shared(schema);
        OutputDeclaration {
            aliases: defs_of(&inlined)
                .into_iter()
                .map(|(k, v)| (k.to_string(), alias(k, &ts_type(v, 1))))
                .collect(),
            ty: ts_type(&inlined, 1),
        }
    }

    fn rule(label: &str) -> Value {
        json!({"type": "object", "title": "Rule",
            "description": format!("A rule for {label}, long enough to be worth sharing."),
            "properties": {"email": {"type": "string"}, "domain": {"type": "string"}}})
    }

    #[test]
    fn shared_texts_declare_as_their_unshared_schema() {
        // `part` repeats and refers back to the recursive `node`, which
        // holds it: shared, it becomes a definition on a circle, which a
        // view of the shared text alone names (per tool). `rule` is kept
        // for a `$ref` with siblings and still read in place elsewhere.
        let part = json!({"type": "object", "description": "x".repeat(200),
            "properties": {"owner": {"$ref": "#/$defs/node"}, "note": {"type": "string"}}});
        let unshared = json!({"type": "object", "properties": {
            "a": part.clone(), "b": part.clone(), "n": {"$ref": "#/$defs/node"},
            "r": {"$ref": "#/$defs/rule"}, "s": {"$ref": "#/$defs/rule", "description": "kept"}
        }, "$defs": {"node": {"type": "object", "properties": {"child": part}}, "rule": rule("x")}});
        let kept = crate::schema::kept_defs(&unshared, &[]);
        assert_eq!(
            kept,
            [("node".to_owned(), false), ("rule".to_owned(), true)]
        );
        let mut shared = unshared.clone();
        assert!(share_repeated(&mut shared) > 0);
        let output = OutputSchema {
            text: crate::ir::SchemaText(Arc::from(shared.to_string())),
            declared_defs: kept,
        };
        assert_eq!(output_declaration(&output).unwrap(), eager(&unshared));
        assert_ne!(declaration_of(&shared), eager(&unshared), "{shared}");
    }

    #[test]
    fn kept_types_are_rendered_once_per_view_across_outputs() {
        // `node` is kept (recursive); `part`, read in place, is what its
        // type spells out. Two outputs with the same definitions render
        // `node` once; a third whose `part` differs must not reuse it.
        let with = |part: Value, root: Value| {
            let mut schema = root;
            schema["$defs"] = json!({
                "node": {"type": "object", "properties": {
                    "next": {"$ref": "#/$defs/node"}, "p": {"$ref": "#/$defs/part"}}},
                "part": part});
            schema
        };
        let part = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let other = json!({"type": "object", "properties": {"b": {"type": "integer"}}});
        // An entry `node` does not reach (the output's own shared part)
        // does not stop the fourth output reusing its type.
        let mut own = with(part.clone(), json!({"items": {"$ref": "#/$defs/own"}}));
        own["$defs"]["own"] = json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/node"}}});
        let schemas = [
            with(part.clone(), json!({"$ref": "#/$defs/node"})),
            with(part, json!({"type": "array", "items": {"$ref": "#/$defs/node"}})),
            with(other, json!({"$ref": "#/$defs/node"})),
            own,
        ];
        let texts: Vec<String> = schemas.iter().map(Value::to_string).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let read = OutputTexts::read(&texts).unwrap();
        let cache = KeptTypes::default();
        for (schema, text) in schemas.iter().zip(&read.outputs) {
            let kept = crate::schema::kept_defs(schema, &[]);
            assert_eq!(kept, [("node".to_owned(), false)]);
            let made = read_declaration(text, &read, &kept, &cache).unwrap();
            assert_eq!(made, eager(schema), "{schema}");
        }
        assert_eq!(cache.len(), 2);
        assert_eq!(read.bodies.len(), 4);
    }

    #[test]
    fn shared_views_render_as_the_inlined_schema() {
        let mut shared = json!({"type": "object", "properties": {
            "a": {"type": "array", "items": rule("x")},
            "b": {"type": "array", "items": rule("x")},
            "c": {"anyOf": [rule("x"), {"type": "null"}]},
            "d": {"allOf": [rule("y"), rule("y")]},
            "n": {"$ref": "#/$defs/node"}
        }, "$defs": {"node": {"type": "object", "properties": {
            "next": {"$ref": "#/$defs/node"}, "r": rule("x")}}}});
        assert!(share_repeated(&mut shared) > 0);
        // A `$ref` with siblings stays a reference, and keeps its target.
        let mut sibling = shared.clone();
        sibling["properties"]["s"] = json!({"$ref": "#/$defs/rule", "description": "kept"});
        // Nothing expandable: only recursive definitions.
        let recursive = json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}},
            "$defs": {"n": {"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}}}});
        // Expansions nested deeper than inlining goes: the view declines.
        let mut chain = serde_json::Map::new();
        for i in 0..300 {
            chain.insert(
                format!("d{i}"),
                json!({"type": "object", "properties": {"x": {"$ref": format!("#/$defs/d{}", i + 1)}}}),
            );
        }
        chain.insert("d300".into(), json!({"type": "string"}));
        let deep = json!({"$ref": "#/$defs/d0", "$defs": chain});
        // One definition expanded at several depths (rendered once per
        // depth: deeper, less of it is spelt out), and along chains of
        // expansions of other lengths.
        let nested = |inner: Value| json!({"type": "object", "properties": {"in": inner}});
        let depths = json!({"type": "object", "properties": {
            "a": {"$ref": "#/$defs/r"},
            "b": nested(nested(json!({"$ref": "#/$defs/r"}))),
            "c": {"$ref": "#/$defs/via"},
            "d": {"type": "array", "items": {"$ref": "#/$defs/r"}}
        }, "$defs": {"r": nested(nested(nested(json!({"type": "string"})))),
            "via": {"$ref": "#/$defs/r"}}});
        for schema in [
            &depths,
            &shared,
            &sibling,
            &recursive,
            &deep,
            &rule("z"),
            &json!(true),
        ] {
            assert_eq!(declaration_of(schema), eager(schema), "{schema}");
        }
        assert!(SharedView::new(&deep).is_none());
        let kept = |s: &Value| -> Vec<String> {
            SharedView::new(s)
                .unwrap()
                .kept
                .iter()
                .map(|(k, _)| k.to_string())
                .collect()
        };
        assert_eq!(kept(&shared), ["node"]);
        assert_eq!(kept(&sibling), ["node", "rule"]);
        assert!(declaration_of(&sibling).ty.contains("s?: Rule"));
    }
}
