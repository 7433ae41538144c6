//! Running the generator over a corpus of real specs and reporting what
//! happened to each: generated, refused with a typed error, or panicked.
//!
//! [`run_spec`] is one generation in memory (panics caught); the
//! `toolforge corpus` command runs it in a child process per spec so each
//! spec's peak memory is measured on its own, and renders the [`Summary`].

pub mod coverage;
mod naming_figures;
mod report;
pub mod source;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use report::{Summary, render_markdown};
pub use source::{SpecEntry, for_each_spec, list_specs, sample, seeded_pick, spec_name};

use crate::Generated;
use crate::config::{ForgeConfig, InvalidOperation, SchemaProfile, sha256_hex};
use crate::emit::CrateLayout;
use crate::ir::DeclaredKind;
use crate::naming::{MAX_TOOL_NAME, short_hash};
use crate::policy::versions::{has_api_word, has_version_word};
use crate::schema::compat::{FeatureCounts, Features};
use crate::schema::strict::strict_input_schema;

/// What happened to one spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A catalogue and files were generated.
    Generated,
    /// The generator refused the spec with a typed error.
    Refused,
    /// The generator panicked (a bug: the target is zero).
    Panicked,
    /// The worker process died (abort, stack overflow, out of memory).
    Crashed,
    /// The worker took longer than the time limit.
    Timeout,
}

impl Outcome {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Generated => "generated",
            Outcome::Refused => "refused",
            Outcome::Panicked => "panicked",
            Outcome::Crashed => "crashed",
            Outcome::Timeout => "timeout",
        }
    }
}

/// The record of one spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecReport {
    /// Corpus name.
    pub name: String,
    /// Spec size in bytes.
    pub bytes: u64,
    /// Outcome.
    pub outcome: Outcome,
    /// Tools generated.
    pub tools: usize,
    /// Operations listed without a tool.
    pub skipped: usize,
    /// Products (modules).
    pub products: usize,
    /// Products whose name carries a version or date word (`v1`, `api20100401`).
    #[serde(default)]
    pub versioned_products: usize,
    /// Products whose name carries an `api` / `apis` / `rest` word.
    #[serde(default)]
    pub api_products: usize,
    /// Tool names that needed the hash fallback.
    pub hashed_names: usize,
    /// Tool names breaking `^[a-z0-9_]{1,64}$` (must be 0).
    pub bad_names: usize,
    /// Tools named `resource_action` by the generic naming rule: their
    /// operationId is missing or a path mashup, so the name changed from
    /// `snake(operationId)` or `method_path_words`.
    #[serde(default)]
    pub resource_names: usize,
    /// Tool names given to more than one tool (must be 0).
    #[serde(default)]
    pub name_collisions: usize,
    /// Tool descriptions converted from HTML to Markdown.
    #[serde(default)]
    pub html_descriptions: usize,
    /// Bytes of all generated files.
    pub output_bytes: u64,
    /// `GenerateError` variant of a refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// JSON pointer a refusal names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_pointer: Option<String>,
    /// Refusal, panic or crash message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Wall time of the generation in milliseconds.
    pub millis: f64,
    /// Peak resident memory of the worker process (kB), when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_kb: Option<u64>,
    /// Features of the generated input schemas.
    pub input: FeatureCounts,
    /// The same schemas under the `strict` profile.
    pub strict: FeatureCounts,
    /// Tools that lost a declared parameter or a non-readOnly body
    /// property (see [`coverage`]; target 0).
    #[serde(default)]
    pub lost_inputs: usize,
    /// The first few of them, `METHOD path: what`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_examples: Vec<String>,
    /// Security schemes the spec declares, per kind (also for refused
    /// specs whose document loads).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub schemes: BTreeMap<DeclaredKind, usize>,
    /// `GET` list operations per paging convention they follow
    /// (`policy::pagination::convention_of`); `none`: lists (an array in
    /// the output) that follow none the generator knows.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub paging: BTreeMap<String, usize>,
}

impl SpecReport {
    /// An empty record for `name` with `outcome`.
    pub fn new(name: &str, bytes: u64, outcome: Outcome) -> Self {
        SpecReport {
            name: name.to_string(),
            bytes,
            outcome,
            tools: 0,
            skipped: 0,
            products: 0,
            versioned_products: 0,
            api_products: 0,
            hashed_names: 0,
            bad_names: 0,
            resource_names: 0,
            name_collisions: 0,
            html_descriptions: 0,
            output_bytes: 0,
            error_kind: None,
            error_pointer: None,
            message: None,
            millis: 0.0,
            peak_rss_kb: None,
            input: FeatureCounts::default(),
            strict: FeatureCounts::default(),
            lost_inputs: 0,
            lost_examples: Vec::new(),
            schemes: BTreeMap::new(),
            paging: BTreeMap::new(),
        }
    }
}

/// The paging convention a tool's list follows, `none` for a `GET` whose
/// output documents an array but follows no known convention, `None` for
/// tools that are not lists.
fn paging_of(tool: &crate::ir::Tool) -> Option<&'static str> {
    if let Some(convention) = crate::policy::pagination::convention_of(tool) {
        return Some(convention.name());
    }
    let lists = tool.method == crate::ir::HttpMethod::Get
        && tool
            .output_schema
            .as_ref()
            .is_some_and(|o| o.text.as_str().contains(r#""type":"array""#));
    lists.then_some("none")
}

/// The configuration a corpus spec is generated with: the generic policy,
/// default options except the schema profile and invalid-operation policy.
pub fn corpus_config(
    name: &str,
    bytes: &[u8],
    profile: SchemaProfile,
    on_invalid: InvalidOperation,
) -> ForgeConfig {
    let stem = name
        .trim_end_matches(".json")
        .trim_end_matches(".yaml")
        .trim_end_matches(".yml");
    let mut config = ForgeConfig::generic(stem, Path::new(name), &sha256_hex(bytes));
    config.options.schema_profile = profile;
    config.options.on_invalid_operation = on_invalid;
    config
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// How a corpus spec is generated.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Schema profile of tool input schemas.
    pub profile: SchemaProfile,
    /// What to do with unreadable operations.
    pub on_invalid: InvalidOperation,
    /// How the generated crate links the runtime.
    pub layout: CrateLayout,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            profile: SchemaProfile::Full,
            on_invalid: InvalidOperation::Fail,
            layout: CrateLayout {
                runtime_path: Some("../runtime".into()),
                standalone: true,
            },
        }
    }
}

/// Generates `bytes` (the spec `name`) in memory and records the outcome;
/// a panic is caught and recorded as [`Outcome::Panicked`]. Returns the
/// generated files too, when there are any.
pub fn run_spec(bytes: &[u8], name: &str, options: &RunOptions) -> (SpecReport, Option<Generated>) {
    let config = corpus_config(name, bytes, options.profile, options.on_invalid);
    let layout = &options.layout;
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| {
        crate::generate(bytes, name, &config, layout)
    }));
    let millis = start.elapsed().as_secs_f64() * 1000.0;
    let size = bytes.len() as u64;
    let mut kept = None;
    let mut report = match result {
        Ok(Ok(generated)) => {
            let mut r = SpecReport::new(name, size, Outcome::Generated);
            let cat = &generated.catalogue;
            r.products = cat.products.len();
            for product in &cat.products {
                r.versioned_products += usize::from(has_version_word(&product.name));
                r.api_products += usize::from(has_api_word(&product.name));
            }
            r.skipped = cat.skipped.len();
            r.output_bytes = generated
                .files
                .iter()
                .map(|f| f.contents.len() as u64)
                .sum();
            for tool in cat.tools() {
                r.tools += 1;
                let key = format!("{} {}", tool.method.as_str(), tool.path);
                if tool.name.ends_with(&format!("_{}", short_hash(&key))) {
                    r.hashed_names += 1;
                }
                if !valid_name(&tool.name) {
                    r.bad_names += 1;
                }
                if let Some(convention) = paging_of(tool) {
                    *r.paging.entry(convention.to_owned()).or_default() += 1;
                }
                r.input.add(Features::of(&tool.input_schema));
                r.strict
                    .add(Features::of(&strict_input_schema(&tool.input_schema)));
            }
            r.name_collisions = naming_figures::collisions(cat);
            r.resource_names = naming_figures::resource_names(cat);
            if let Ok(doc) = crate::load::load(bytes, name) {
                r.html_descriptions = naming_figures::html_descriptions(&doc, cat);
                let lost = coverage::lost_inputs(&doc, cat);
                r.lost_inputs = lost.len();
                r.lost_examples = lost.into_iter().take(3).collect();
            }
            for declared in cat.profile.schemes.iter().filter_map(|s| s.declared) {
                *r.schemes.entry(declared).or_default() += 1;
            }
            kept = Some(generated);
            r
        }
        Ok(Err(e)) => {
            let mut r = SpecReport::new(name, size, Outcome::Refused);
            r.error_kind = Some(e.kind().to_string());
            r.error_pointer = e.pointer().map(str::to_string);
            r.message = Some(e.to_string());
            if let Ok(doc) = crate::load::load(bytes, name) {
                r.schemes = crate::security::declared_counts(&doc);
            }
            r
        }
        Err(payload) => {
            let mut r = SpecReport::new(name, size, Outcome::Panicked);
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic with a non-string payload".into());
            r.message = Some(text);
            r
        }
    };
    report.millis = millis;
    (report, kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_generation_and_refusals() {
        let spec = br#"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {
            "/items/{id}": {"get": {"operationId": "getItem", "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}}],
                "responses": {"200": {"description": "ok"}}}}}}"#;
        let opts = RunOptions::default();
        let (r, files) = run_spec(spec, "t.json", &opts);
        assert_eq!(r.outcome, Outcome::Generated, "{r:?}");
        assert!(files.is_some());
        assert_eq!((r.tools, r.bad_names, r.hashed_names), (1, 0, 0));
        assert_eq!((r.input.format, r.strict.format), (1, 0));
        assert!(r.output_bytes > 0);
        assert!(
            r.schemes.is_empty(),
            "the synthesised scheme is not counted"
        );
        let strict = RunOptions {
            profile: SchemaProfile::Strict,
            ..RunOptions::default()
        };
        let (r, generated) = run_spec(spec, "t.json", &strict);
        assert_eq!(
            r.input.format, 0,
            "the strict profile applies to generated schemas"
        );
        let tool = generated
            .unwrap()
            .catalogue
            .tools()
            .next()
            .cloned()
            .unwrap();
        assert_eq!(
            tool.input_schema["properties"]["id"],
            serde_json::json!({"type": "string", "description": "(format: uuid)"})
        );

        let bad = br##"{"openapi": "3.0.3", "paths": {"/x": {"get": {"parameters": [{"$ref": "#/nope"}]}}}}"##;
        let (r, _) = run_spec(bad, "b.json", &opts);
        assert_eq!(r.outcome, Outcome::Refused);
        assert_eq!(r.error_kind.as_deref(), Some("DanglingRef"));
        assert_eq!(
            r.error_pointer.as_deref(),
            Some("/paths/~1x/get/parameters/0")
        );
        let odd = br#"{"openapi": "3.0.3", "paths": {"/x": {"get": {"parameters": 5}}}}"#;
        let (r, _) = run_spec(odd, "o.json", &opts);
        assert_eq!(r.error_kind.as_deref(), Some("Invalid"));
        let skip = RunOptions {
            on_invalid: InvalidOperation::Skip,
            ..RunOptions::default()
        };
        let (r, _) = run_spec(odd, "o.json", &skip);
        assert_eq!((r.outcome, r.skipped), (Outcome::Generated, 1));
    }
}
