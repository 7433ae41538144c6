//! Deterministic, schema-valid sample arguments for a tool's input schema.
//!
//! [`sample_args`] walks a JSON Schema (draft 2020-12, as emitted into
//! `ToolDef::input_schema`) and builds one value that satisfies it: `const`,
//! `enum` (first non-null value), `default` for scalars, `format`s the
//! OpenAPI world uses, length and range bounds, `pattern` (a seeded
//! `rand_regex` sample, re-checked with `jsonschema`), arrays, objects,
//! `$ref` into `$defs` (bounded recursion), `anyOf` / `oneOf` (first non-null
//! branch) and `allOf` (merged). The result is always the same for the same
//! schema and options, so failures reproduce.

use std::collections::BTreeSet;

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use serde_json::{Map, Number, Value, json};

/// Which optional object properties the sampler fills in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optional {
    /// Every optional property (bounded by the recursion limit), so
    /// serialisation of optional query parameters and body fields is exercised.
    All,
    /// Only required properties (plus the forced top-level ones).
    None,
}

/// Options for [`sample_args`].
#[derive(Debug, Clone)]
pub struct SampleOptions {
    /// Which optional properties to include.
    pub optional: Optional,
    /// Top-level properties always included even when optional (for example
    /// path parameters that the runtime could otherwise fill in).
    pub force: BTreeSet<String>,
    /// Top-level properties set to this exact value (for example the
    /// `account_or_zone` route selector).
    pub overrides: Map<String, Value>,
    /// Seed for pattern strings.
    pub seed: u64,
    /// How many `$ref`s deep optional content is still generated.
    pub max_ref_depth: usize,
}

impl Default for SampleOptions {
    fn default() -> Self {
        SampleOptions {
            optional: Optional::All,
            force: BTreeSet::new(),
            overrides: Map::new(),
            seed: 0x746f_6f6c_666f_7267, // "toolforg"
            max_ref_depth: 3,
        }
    }
}

/// Why no sample could be produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleError {
    /// JSON pointer-like location inside the instance.
    pub at: String,
    /// What went wrong.
    pub reason: String,
}

impl std::fmt::Display for SampleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot sample a value at `{}`: {}", self.at, self.reason)
    }
}

impl std::error::Error for SampleError {}

/// Produces arguments (the top-level object) for `schema`.
///
/// # Errors
///
/// Fails when the schema is not an object schema, a `$ref` cannot be
/// resolved, a required recursion never ends, or a `pattern` cannot be
/// satisfied within the length bounds.
pub fn sample_args(
    schema: &Value,
    opts: &SampleOptions,
) -> Result<Map<String, Value>, SampleError> {
    let mut sampler = Sampler::new(schema, opts);
    match sampler.value(schema, "", 0, 0, true)? {
        Value::Object(map) => Ok(map),
        other => Err(SampleError {
            at: String::new(),
            reason: format!("the input schema produced {other}, not an object"),
        }),
    }
}

/// Produces one value for an arbitrary schema whose `$ref`s point into
/// `root` (pass the schema itself as `root` when it is self-contained).
///
/// # Errors
///
/// As [`sample_args`].
pub fn sample_value(
    root: &Value,
    schema: &Value,
    opts: &SampleOptions,
) -> Result<Value, SampleError> {
    let mut sampler = Sampler::new(root, opts);
    sampler.value(schema, "", 0, 0, false)
}

/// Checks `instance` against `schema` (draft 2020-12, formats validated too)
/// and returns every error as text.
///
/// # Errors
///
/// The schema does not compile, or the instance does not validate.
pub fn validate(schema: &Value, instance: &Value) -> Result<(), Vec<String>> {
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| vec![format!("the schema does not compile: {e}")])?;
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{}: {}", e.instance_path(), e))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// How many times a `pattern` is sampled before giving up.
const PATTERN_TRIES: usize = 200;
/// Repetition bound for `*`, `+` and open `{n,}` in patterns.
const MAX_REPEAT: u32 = 6;
/// Hard bound on nesting, whatever the schema says.
const MAX_NESTING: usize = 32;

struct Sampler<'a> {
    root: &'a Value,
    opts: &'a SampleOptions,
    rng: StdRng,
    /// `$ref`s being expanded on the current path, to spot recursion.
    refs: Vec<String>,
}

impl<'a> Sampler<'a> {
    fn new(root: &'a Value, opts: &'a SampleOptions) -> Self {
        Sampler {
            root,
            opts,
            rng: StdRng::seed_from_u64(opts.seed),
            refs: Vec::new(),
        }
    }

    /// One value for `schema`; see [`Sampler::value_inner`].
    fn value(
        &mut self,
        schema: &Value,
        at: &str,
        ref_depth: usize,
        variant: usize,
        top: bool,
    ) -> Result<Value, SampleError> {
        let mark = self.refs.len();
        let result = self.value_inner(schema, at, ref_depth, variant, top);
        self.refs.truncate(mark);
        result
    }

    /// One value for `schema`. `variant` picks among enum values for array
    /// items; `top` marks the tool's argument object.
    fn value_inner(
        &mut self,
        schema: &Value,
        at: &str,
        ref_depth: usize,
        variant: usize,
        top: bool,
    ) -> Result<Value, SampleError> {
        if at.matches('/').count() > MAX_NESTING {
            return Err(self.err(at, "the schema nests too deeply"));
        }
        let map = match schema {
            Value::Bool(true) => return Ok(json!("sample")),
            Value::Bool(false) => return Err(self.err(at, "the schema is `false`")),
            Value::Object(map) => map,
            other => return Err(self.err(at, &format!("{other} is not a schema"))),
        };
        let (schema, ref_depth) = self.flatten(map, at, ref_depth)?;
        if let Some(value) = schema.get("const") {
            return Ok(value.clone());
        }
        if let Some(Value::Array(values)) = schema.get("enum") {
            let non_null: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
            return match (non_null.is_empty(), values.is_empty()) {
                (_, true) => Err(self.err(at, "`enum` is empty")),
                (true, false) => Ok(Value::Null),
                (false, false) => Ok(non_null[variant % non_null.len()].clone()),
            };
        }
        let ty = pick_type(&schema);
        if let Some(default) = schema.get("default") {
            let scalar = matches!(
                default,
                Value::String(_) | Value::Number(_) | Value::Bool(_)
            );
            if scalar && type_matches(&ty, default) {
                return Ok(default.clone());
            }
        }
        match ty.as_str() {
            "null" => Ok(Value::Null),
            "boolean" => Ok(Value::Bool(true)),
            "integer" => self.number(&schema, at, true),
            "number" => self.number(&schema, at, false),
            "array" => self.array(&schema, at, ref_depth),
            "object" => self.object(&schema, at, ref_depth, top),
            _ => self.string(&schema, at, variant),
        }
    }

    /// Resolves `$ref`, `allOf`, `anyOf` and `oneOf` into one plain schema
    /// object. Returns it with the updated `$ref` depth.
    fn flatten(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        mut ref_depth: usize,
    ) -> Result<(Map<String, Value>, usize), SampleError> {
        let mut out = map.clone();
        // Bounded: every round removes at least one combinator or reference.
        for _ in 0..64 {
            if let Some(Value::String(reference)) = out.remove("$ref") {
                ref_depth += 1;
                if ref_depth > self.opts.max_ref_depth + 8 {
                    return Err(self.err(at, "required content recurses without end"));
                }
                // A schema inside itself: from here on only required content.
                if self.refs.contains(&reference) {
                    ref_depth = ref_depth.max(self.opts.max_ref_depth + 1);
                }
                self.refs.push(reference.clone());
                let target = self.resolve(&reference, at)?;
                out = merge(target, &out);
                continue;
            }
            if let Some(Value::Array(parts)) = out.remove("allOf") {
                for part in &parts {
                    match part {
                        Value::Object(part) => out = merge(part, &out),
                        Value::Bool(true) => {}
                        _ => return Err(self.err(at, "`allOf` holds a non-object schema")),
                    }
                }
                continue;
            }
            let union = out.remove("anyOf").or_else(|| out.remove("oneOf"));
            if let Some(Value::Array(branches)) = union {
                let branch = branches
                    .iter()
                    .find(|b| !is_null_schema(b))
                    .or(branches.first())
                    .ok_or_else(|| self.err(at, "empty `anyOf`/`oneOf`"))?;
                match branch {
                    Value::Object(branch) => out = merge(branch, &out),
                    Value::Bool(true) => {}
                    _ => return Err(self.err(at, "`anyOf`/`oneOf` branch is not an object")),
                }
                continue;
            }
            return Ok((out, ref_depth));
        }
        Err(self.err(at, "too many nested combinators"))
    }

    fn resolve(&self, reference: &str, at: &str) -> Result<&Map<String, Value>, SampleError> {
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| self.err(at, &format!("`$ref` {reference} is not local")))?;
        let decoded = pointer.replace("%25", "%");
        match self.root.pointer(&decoded) {
            Some(Value::Object(target)) => Ok(target),
            Some(_) => Err(self.err(at, &format!("`$ref` {reference} is not an object schema"))),
            None => Err(self.err(at, &format!("`$ref` {reference} does not resolve"))),
        }
    }

    fn number(
        &self,
        schema: &Map<String, Value>,
        at: &str,
        integer: bool,
    ) -> Result<Value, SampleError> {
        let get = |k: &str| schema.get(k).and_then(Value::as_f64);
        let mut low = get("minimum");
        let mut high = get("maximum");
        if let Some(x) = get("exclusiveMinimum") {
            let x = if integer { x.floor() + 1.0 } else { x + 0.5 };
            low = Some(low.map_or(x, |l| l.max(x)));
        }
        if let Some(x) = get("exclusiveMaximum") {
            let x = if integer { x.ceil() - 1.0 } else { x - 0.5 };
            high = Some(high.map_or(x, |h| h.min(x)));
        }
        // The smallest allowed value, or 1 when nothing pins it down.
        let mut value = match (low, high) {
            (Some(l), _) => l,
            (None, Some(h)) => h.min(1.0),
            (None, None) => 1.0,
        };
        if integer {
            value = value.ceil();
        }
        if let Some(step) = get("multipleOf").filter(|s| *s > 0.0) {
            value = (value / step).ceil() * step;
        }
        if let Some(h) = high
            && value > h
        {
            return Err(self.err(at, "the numeric bounds leave no value"));
        }
        Ok(number_value(value))
    }

    fn string(
        &mut self,
        schema: &Map<String, Value>,
        at: &str,
        variant: usize,
    ) -> Result<Value, SampleError> {
        let min = schema
            .get("minLength")
            .and_then(Value::as_u64)
            .map_or(0, len);
        let max = schema.get("maxLength").and_then(Value::as_u64).map(len);
        if let Some(Value::String(pattern)) = schema.get("pattern") {
            return self.pattern(pattern, schema, at).map(Value::String);
        }
        let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
        let mut text = match format {
            "uuid" => "3f2504e0-4f89-41d3-9a0c-0305e82c3301".to_owned(),
            "date-time" => "2024-01-02T03:04:05Z".to_owned(),
            "date" => "2024-01-02".to_owned(),
            "time" => "03:04:05Z".to_owned(),
            "email" | "idn-email" => "user@example.com".to_owned(),
            "uri" | "url" | "iri" => "https://example.com/path".to_owned(),
            "uri-reference" | "iri-reference" => "/path".to_owned(),
            "hostname" | "idn-hostname" => "example.com".to_owned(),
            "ipv4" => "192.0.2.1".to_owned(),
            "ipv6" => "2001:db8::1".to_owned(),
            "byte" => "c2FtcGxl".to_owned(),
            "duration" => "P1D".to_owned(),
            _ if variant > 0 => format!("sample{variant}"),
            _ => "sample".to_owned(),
        };
        let chars = text.chars().count();
        let fixed_format = !format.is_empty() && !matches!(format, "binary" | "password");
        if chars < min {
            if fixed_format {
                return Err(self.err(at, "minLength is longer than the sample for its format"));
            }
            text.extend(std::iter::repeat_n('x', min - chars));
        }
        if let Some(max) = max
            && text.chars().count() > max
        {
            if fixed_format {
                return Err(self.err(at, "maxLength is shorter than the sample for its format"));
            }
            text = text.chars().take(max).collect();
        }
        Ok(Value::String(text))
    }

    /// A string matching `pattern` (and the other string constraints of
    /// `schema`), checked with `jsonschema`.
    fn pattern(
        &mut self,
        pattern: &str,
        schema: &Map<String, Value>,
        at: &str,
    ) -> Result<String, SampleError> {
        let mut check = Map::new();
        check.insert("type".to_owned(), json!("string"));
        for key in ["pattern", "minLength", "maxLength", "format"] {
            if let Some(v) = schema.get(key) {
                check.insert(key.to_owned(), v.clone());
            }
        }
        let check = Value::Object(check);
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&check)
            .map_err(|e| self.err(at, &format!("pattern {pattern:?} does not compile: {e}")))?;
        let generator = pattern_generator(pattern)
            .map_err(|e| self.err(at, &format!("pattern {pattern:?}: {e}")))?;
        let mut fallback = None;
        for _ in 0..PATTERN_TRIES {
            let candidate: String =
                match rand::RngExt::sample::<Result<String, _>, _>(&mut self.rng, &generator) {
                    Ok(s) => s,
                    Err(_) => continue,
                };
            if validator.is_valid(&Value::String(candidate.clone())) {
                // Prefer printable ASCII: it keeps reports readable.
                if candidate.chars().all(|c| c.is_ascii_graphic()) {
                    return Ok(candidate);
                }
                fallback.get_or_insert(candidate);
            }
        }
        fallback.ok_or_else(|| {
            self.err(
                at,
                &format!("no sample of pattern {pattern:?} met the string constraints in {PATTERN_TRIES} tries"),
            )
        })
    }

    fn array(
        &mut self,
        schema: &Map<String, Value>,
        at: &str,
        ref_depth: usize,
    ) -> Result<Value, SampleError> {
        let min = schema
            .get("minItems")
            .and_then(Value::as_u64)
            .map_or(0, len);
        let max = schema.get("maxItems").and_then(Value::as_u64).map(len);
        let unique = schema.get("uniqueItems").and_then(Value::as_bool) == Some(true);
        // Two items exercise array serialisation (separators, repeated
        // keys); deeper than the recursion limit only what is required.
        let wanted = if ref_depth > self.opts.max_ref_depth {
            min
        } else {
            min.max(2)
        };
        let count = max.map_or(wanted, |m| wanted.min(m));
        let prefix = schema.get("prefixItems").and_then(Value::as_array);
        let items = schema.get("items");
        let mut out: Vec<Value> = Vec::with_capacity(count);
        for i in 0..count {
            let item_schema = match (prefix.and_then(|p| p.get(i)), items) {
                (Some(s), _) => s,
                (None, Some(s)) => s,
                (None, None) => &Value::Bool(true),
            };
            let item = self.value(item_schema, &format!("{at}/{i}"), ref_depth, i, false)?;
            if unique && out.contains(&item) {
                if i >= min {
                    break;
                }
                return Err(self.err(at, "cannot make the required items unique"));
            }
            out.push(item);
        }
        Ok(Value::Array(out))
    }

    fn object(
        &mut self,
        schema: &Map<String, Value>,
        at: &str,
        ref_depth: usize,
        top: bool,
    ) -> Result<Value, SampleError> {
        let empty = Map::new();
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let min_props = schema
            .get("minProperties")
            .and_then(Value::as_u64)
            .map_or(0, len);
        let max_props = schema.get("maxProperties").and_then(Value::as_u64).map(len);
        let deep = ref_depth > self.opts.max_ref_depth;
        let mut out = Map::new();
        // Properties in schema order: required ones, then the chosen optional ones.
        for (name, prop) in props {
            let forced = top && self.opts.force.contains(name.as_str());
            if top && let Some(value) = self.opts.overrides.get(name) {
                out.insert(name.clone(), value.clone());
                continue;
            }
            let include = required.contains(name.as_str())
                || forced
                || (!deep && self.opts.optional == Optional::All && is_useful_optional(prop));
            if include {
                let value = self.value(prop, &format!("{at}/{name}"), ref_depth, 0, false)?;
                out.insert(name.clone(), value);
            }
        }
        for name in &required {
            if !out.contains_key(*name) {
                let value = self.value(
                    &Value::Bool(true),
                    &format!("{at}/{name}"),
                    ref_depth,
                    0,
                    false,
                )?;
                out.insert((*name).to_owned(), value);
            }
        }
        if top {
            for (name, value) in &self.opts.overrides {
                out.entry(name.clone()).or_insert_with(|| value.clone());
            }
        }
        // Too few properties: add optional ones in schema order, then free-form keys.
        for (name, prop) in props {
            if out.len() >= min_props {
                break;
            }
            if !out.contains_key(name) {
                let value = self.value(prop, &format!("{at}/{name}"), ref_depth, 0, false)?;
                out.insert(name.clone(), value);
            }
        }
        let extra_allowed = !matches!(schema.get("additionalProperties"), Some(Value::Bool(false)));
        let mut n = 0;
        while out.len() < min_props && extra_allowed {
            n += 1;
            let extra = match schema.get("additionalProperties") {
                Some(s @ Value::Object(_)) => {
                    self.value(s, &format!("{at}/key{n}"), ref_depth, 0, false)?
                }
                _ => json!("sample"),
            };
            out.insert(format!("key{n}"), extra);
        }
        if out.len() < min_props {
            return Err(self.err(at, "cannot reach minProperties"));
        }
        if let Some(max) = max_props
            && out.len() > max
        {
            let keep: Vec<String> = out
                .keys()
                .filter(|k| required.contains(k.as_str()))
                .chain(out.keys().filter(|k| !required.contains(k.as_str())))
                .take(max)
                .cloned()
                .collect();
            out.retain(|k, _| keep.contains(k));
        }
        Ok(Value::Object(out))
    }

    fn err(&self, at: &str, reason: &str) -> SampleError {
        SampleError {
            at: if at.is_empty() {
                "/".to_owned()
            } else {
                at.to_owned()
            },
            reason: reason.to_owned(),
        }
    }
}

/// An optional property worth filling: anything but a schema that only
/// allows `null`.
fn is_useful_optional(schema: &Value) -> bool {
    !is_null_schema(schema)
}

fn is_null_schema(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => {
            m.get("type") == Some(&json!("null"))
                || m.get("const") == Some(&Value::Null)
                || m.get("enum") == Some(&json!([null]))
        }
        _ => false,
    }
}

/// The type to generate: the first non-null entry of `type`, else one
/// inferred from the keywords present.
fn pick_type(schema: &Map<String, Value>) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => return t.clone(),
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            if let Some(t) = names.iter().find(|t| **t != "null").or(names.first()) {
                return (*t).to_owned();
            }
        }
        _ => {}
    }
    let has = |keys: &[&str]| keys.iter().any(|k| schema.contains_key(*k));
    if has(&[
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
    ]) {
        "object".to_owned()
    } else if has(&["items", "prefixItems", "minItems", "maxItems"]) {
        "array".to_owned()
    } else if has(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) {
        "number".to_owned()
    } else {
        "string".to_owned()
    }
}

fn type_matches(ty: &str, value: &Value) -> bool {
    match value {
        Value::String(_) => ty == "string",
        Value::Bool(_) => ty == "boolean",
        Value::Number(n) => ty == "number" || (ty == "integer" && (n.is_i64() || n.is_u64())),
        _ => false,
    }
}

/// Merges two schema objects as `allOf` would: properties and `required`
/// are united, bounds take the stricter side, `type` and `enum` intersect.
/// Other keywords keep `base`'s value unless only `extra` has one.
pub fn merge(base: &Map<String, Value>, extra: &Map<String, Value>) -> Map<String, Value> {
    let mut out = base.clone();
    for (key, value) in extra {
        let Some(existing) = out.get(key).cloned() else {
            out.insert(key.clone(), value.clone());
            continue;
        };
        let merged = match key.as_str() {
            "properties" => {
                let mut props = existing.as_object().cloned().unwrap_or_default();
                for (name, schema) in value.as_object().into_iter().flatten() {
                    let entry = match props.get(name) {
                        Some(prev) if prev != schema => json!({"allOf": [prev, schema]}),
                        _ => schema.clone(),
                    };
                    props.insert(name.clone(), entry);
                }
                Value::Object(props)
            }
            "required" => {
                let mut names: Vec<Value> = existing.as_array().cloned().unwrap_or_default();
                for name in value.as_array().into_iter().flatten() {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
                Value::Array(names)
            }
            "minimum" | "minLength" | "minItems" | "minProperties" | "exclusiveMinimum" => {
                max_number(&existing, value)
            }
            "maximum" | "maxLength" | "maxItems" | "maxProperties" | "exclusiveMaximum" => {
                min_number(&existing, value)
            }
            "type" => intersect_types(&existing, value),
            "enum" => {
                let other = value.as_array().cloned().unwrap_or_default();
                Value::Array(
                    existing
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|v| other.contains(v))
                        .cloned()
                        .collect(),
                )
            }
            "allOf" => {
                let mut all = existing.as_array().cloned().unwrap_or_default();
                all.extend(value.as_array().cloned().unwrap_or_default());
                Value::Array(all)
            }
            _ => existing,
        };
        out.insert(key.clone(), merged);
    }
    out
}

fn max_number(a: &Value, b: &Value) -> Value {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if y > x => b.clone(),
        _ => a.clone(),
    }
}

fn min_number(a: &Value, b: &Value) -> Value {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if y < x => b.clone(),
        _ => a.clone(),
    }
}

fn intersect_types(a: &Value, b: &Value) -> Value {
    let list = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    };
    let other = list(b);
    let both: Vec<String> = list(a)
        .into_iter()
        .filter(|t| other.contains(t) || (t == "number" && other.iter().any(|o| o == "integer")))
        .map(|t| {
            if t == "number" && !other.contains(&t) {
                "integer".to_owned()
            } else {
                t
            }
        })
        .collect();
    match both.as_slice() {
        [one] => Value::String(one.clone()),
        [] => a.clone(),
        _ => Value::Array(both.into_iter().map(Value::String).collect()),
    }
}

fn number_value(x: f64) -> Value {
    // `as` is exact here: the value is integral and well inside i64.
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::Number(Number::from(x as i64))
    } else {
        Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

fn len(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Compiles an ECMA-262-ish `pattern` into a generator. Look-around
/// assertions (`^`, `$`, `\b`) are dropped (the candidates are re-checked
/// against the real pattern afterwards); classes are ASCII when possible so
/// `\d` and `\w` mean what they mean in ECMA-262.
fn pattern_generator(pattern: &str) -> Result<rand_regex::Regex, String> {
    let parse = |unicode: bool| {
        regex_syntax::ParserBuilder::new()
            .unicode(unicode)
            .utf8(true)
            .build()
            .parse(pattern)
            .map_err(|e| e.to_string())
    };
    let hir = parse(false).or_else(|_| parse(true))?;
    rand_regex::Regex::with_hir(strip_looks(hir), MAX_REPEAT).map_err(|e| e.to_string())
}

fn strip_looks(hir: regex_syntax::hir::Hir) -> regex_syntax::hir::Hir {
    use regex_syntax::hir::{Capture, Hir, HirKind, Repetition};
    match hir.into_kind() {
        HirKind::Look(_) | HirKind::Empty => Hir::empty(),
        HirKind::Literal(lit) => Hir::literal(lit.0),
        HirKind::Class(class) => Hir::class(class),
        HirKind::Repetition(rep) => Hir::repetition(Repetition {
            sub: Box::new(strip_looks(*rep.sub)),
            ..rep
        }),
        HirKind::Capture(cap) => Hir::capture(Capture {
            sub: Box::new(strip_looks(*cap.sub)),
            ..cap
        }),
        HirKind::Concat(parts) => Hir::concat(parts.into_iter().map(strip_looks).collect()),
        HirKind::Alternation(parts) => {
            Hir::alternation(parts.into_iter().map(strip_looks).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(schema: Value) -> Map<String, Value> {
        let args = sample_args(&schema, &SampleOptions::default()).unwrap();
        if let Err(errors) = validate(&schema, &Value::Object(args.clone())) {
            panic!("{} is invalid: {errors:#?}", Value::Object(args));
        }
        args
    }

    #[test]
    fn scalars_follow_type_enum_const_default_and_bounds() {
        let args = check(json!({
            "type": "object",
            "properties": {
                "e": {"type": "string", "enum": ["b", "a"]},
                "n": {"enum": [null, "x"]},
                "c": {"const": 7},
                "d": {"type": "string", "enum": ["x", "y"], "default": "y"},
                "dn": {"type": "number", "default": 20, "minimum": 5},
                "i": {"type": "integer", "minimum": 10, "maximum": 20},
                "x": {"type": "integer", "exclusiveMinimum": 3, "multipleOf": 5},
                "f": {"type": "number", "maximum": 0.5},
                "b": {"type": "boolean"},
                "s": {"type": "string", "minLength": 10, "maxLength": 12},
                "short": {"type": "string", "maxLength": 2},
                "nul": {"type": ["null", "string"]}
            },
            "required": ["e"]
        }));
        assert_eq!(args["e"], "b");
        assert_eq!(args["n"], "x");
        assert_eq!(args["c"], 7);
        assert_eq!(args["d"], "x", "enum wins over default");
        assert_eq!(args["dn"], 20);
        assert_eq!(args["i"], 10);
        assert_eq!(args["x"], 5);
        assert_eq!(args["f"], 0.5);
        assert_eq!(args["b"], true);
        assert_eq!(args["s"].as_str().unwrap().len(), 10);
        assert_eq!(args["short"], "sa");
        assert_eq!(args["nul"], "sample");
    }

    #[test]
    fn formats_are_valid() {
        let formats = [
            "uuid",
            "date-time",
            "date",
            "time",
            "email",
            "uri",
            "hostname",
            "ipv4",
            "ipv6",
        ];
        let props: Map<String, Value> = formats
            .iter()
            .map(|f| ((*f).to_owned(), json!({"type": "string", "format": f})))
            .collect();
        let args = check(json!({"type": "object", "properties": props}));
        assert_eq!(args.len(), formats.len());
    }

    #[test]
    fn patterns_are_matched_and_deterministic() {
        let schema = json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*[a-z0-9]$", "minLength": 3, "maxLength": 64},
                "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
                "digits": {"type": "string", "pattern": "^\\d+$"},
                "alt": {"type": "string", "pattern": "^a$|^bb$"},
                "loose": {"type": "string", "pattern": "x\\.y"},
                "zone": {"type": "string", "maxLength": 253, "pattern": "^([a-zA-Z0-9][-a-zA-Z0-9]*\\.)+[-a-zA-Z0-9]{2,20}$"}
            },
            "required": ["id", "name", "date", "digits", "alt", "loose", "zone"]
        });
        let first = check(schema.clone());
        assert_eq!(first["id"].as_str().unwrap().len(), 32);
        assert!(
            first["digits"]
                .as_str()
                .unwrap()
                .bytes()
                .all(|b| b.is_ascii_digit())
        );
        assert_eq!(first, check(schema), "same seed, same sample");
    }

    #[test]
    fn optional_selection_and_forced_properties() {
        let schema = json!({
            "type": "object",
            "properties": {
                "req": {"type": "string"},
                "opt": {"type": "string"},
                "path": {"type": "string"},
                "selector": {"type": "string", "enum": ["accounts", "zones"]}
            },
            "required": ["req", "selector"]
        });
        let all = check(schema.clone());
        assert_eq!(all.len(), 4);
        let opts = SampleOptions {
            optional: Optional::None,
            force: ["path".to_owned()].into(),
            overrides: [("selector".to_owned(), json!("zones"))]
                .into_iter()
                .collect(),
            ..SampleOptions::default()
        };
        let minimal = sample_args(&schema, &opts).unwrap();
        assert_eq!(
            Value::Object(minimal),
            json!({"req": "sample", "path": "sample", "selector": "zones"})
        );
    }

    #[test]
    fn arrays_objects_and_min_properties() {
        let args = check(json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 100}},
                "types": {"type": "array", "items": {"type": "string", "enum": ["A", "AAAA"]}, "uniqueItems": true},
                "one": {"type": "array", "maxItems": 1, "items": {"type": "integer"}},
                "many": {"type": "array", "minItems": 3, "items": {"type": "string"}},
                "patch": {"type": "object", "minProperties": 1, "properties": {"a": {"type": "boolean"}}},
                "free": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}},
                "bag": {"type": "object", "additionalProperties": true}
            },
            "required": ["patch", "free"]
        }));
        assert_eq!(args["tags"], json!(["sample", "sample1"]));
        assert_eq!(args["types"], json!(["A", "AAAA"]));
        assert_eq!(args["one"], json!([1]));
        assert_eq!(args["many"].as_array().unwrap().len(), 3);
        assert_eq!(args["patch"], json!({"a": true}));
        assert_eq!(args["free"], json!({"key1": 1, "key2": 1}));
        let minimal = sample_args(
            &json!({"type": "object", "properties": {"patch": {"type": "object", "minProperties": 1, "properties": {"a": {"type": "boolean"}}}}, "required": ["patch"]}),
            &SampleOptions { optional: Optional::None, ..SampleOptions::default() },
        )
        .unwrap();
        assert_eq!(minimal["patch"], json!({"a": true}));
    }

    #[test]
    fn refs_recursion_and_combinators() {
        let args = check(json!({
            "type": "object",
            "$defs": {
                "expr": {
                    "type": "object",
                    "properties": {
                        "field": {"type": "string", "maxLength": 128},
                        "and": {"type": "array", "items": {"$ref": "#/$defs/expr"}},
                        "not": {"$ref": "#/$defs/expr"},
                        "group": {"$ref": "#/$defs/group"}
                    }
                },
                "group": {
                    "type": "object",
                    "required": ["expression"],
                    "properties": {"expression": {"$ref": "#/$defs/expr"}, "label": {"type": "string"}}
                },
                "a": {"type": "object", "required": ["type", "content"], "properties": {"type": {"enum": ["A"]}, "content": {"type": "string", "format": "ipv4"}}},
                "mx": {"type": "object", "required": ["type", "priority"], "properties": {"type": {"enum": ["MX"]}, "priority": {"type": "number"}}}
            },
            "properties": {
                "tree": {"$ref": "#/$defs/expr", "description": "sibling keywords are kept"},
                "record": {"oneOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/mx"}]},
                "nullable": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 4}]},
                "merged": {"allOf": [
                    {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 3}}},
                    {"type": "object", "required": ["account"], "properties": {"account": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}}
                ]}
            },
            "required": ["tree", "record", "merged"]
        }));
        assert_eq!(args["record"]["type"], "A");
        assert_eq!(args["record"]["content"], "192.0.2.1");
        assert_eq!(args["nullable"], 4);
        assert_eq!(
            args["merged"],
            json!({"name": "sam", "account": {"id": "sample"}})
        );
        assert!(args["tree"]["and"].is_array());
    }

    #[test]
    fn file_upload_schema_takes_text() {
        let args = check(json!({
            "type": "object",
            "properties": {
                "file": {"anyOf": [
                    {"type": "string", "description": "File content as UTF-8 text."},
                    {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"], "additionalProperties": false}
                ]},
                "files": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "object"}]}}
            },
            "required": ["file"]
        }));
        assert_eq!(args["file"], "sample");
        assert_eq!(args["files"], json!(["sample", "sample1"]));
    }

    #[test]
    fn impossible_schemas_are_reported() {
        let err = sample_args(
            &json!({"type": "object", "properties": {"x": {"type": "integer", "minimum": 5, "maximum": 4}}, "required": ["x"]}),
            &SampleOptions::default(),
        )
        .unwrap_err();
        assert_eq!(err.at, "/x");
        let err = sample_args(
            &json!({"type": "object", "$defs": {"r": {"type": "object", "required": ["r"], "properties": {"r": {"$ref": "#/$defs/r"}}}}, "properties": {"r": {"$ref": "#/$defs/r"}}, "required": ["r"]}),
            &SampleOptions::default(),
        )
        .unwrap_err();
        assert!(err.reason.contains("recurses"), "{err}");
    }
}
