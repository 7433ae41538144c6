//! Resources and skills: `resources/list`, `resources/read`, `skills/list`
//! and `skills/get` over the static catalogue.
//!
//! Two kinds of resource are served, each built at most once per process
//! (the product index on first use, so a large API's start-up does not pay
//! for a resource few clients read):
//!
//! - `api://products`: the exposed products with their tools (name, title,
//!   method, path) as JSON, so a client that browses resources sees the
//!   API's shape without a tool call. It follows `--products` /
//!   `--read-only`.
//! - `skill://<name>/<path>`: every file of every embedded skill (the MCP
//!   Skills extension, SEP-2640). `resources/list` lists each skill's
//!   `SKILL.md`; the other files are readable by URI and listed in the
//!   skill's manifest (`skills/list`, `skills/get`).
//!
//! Every result carries the extension's cache hints: the content is
//! compiled into the binary, so it stays fresh for an hour and may be
//! cached by anyone (`ttlMs: 3600000`, `cacheScope: "public"`). Unknown
//! URIs and any cursor (everything is listed in one page) are `-32602`.

use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{
    CacheScope, GetSkillResult, ListResourcesResult, ListSkillsResult, PaginatedRequestParams,
    ReadResourceResult, Resource, ResourceContents, Skill as WireSkill, SkillFrontmatter,
    SkillResource, SkillResources,
};
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

use crate::catalogue::ToolDef;
use crate::skills::{SKILL_MD, Skill, SkillFile, is_text_mime};

/// How long results stay fresh, in milliseconds (one hour).
pub const CACHE_TTL_MS: u64 = 3_600_000;

/// URI of the product index resource.
pub const PRODUCTS_URI: &str = "api://products";

/// The resources and skills of one server.
#[derive(Debug)]
pub struct Resources {
    api: String,
    tools: Vec<&'static ToolDef>,
    products: OnceLock<String>,
    skills: &'static [Skill],
}

impl Resources {
    /// The product index of `tools` (the exposed tools, in product order)
    /// and the catalogue's `skills`.
    pub fn new(api: &str, tools: &[&'static ToolDef], skills: &'static [Skill]) -> Self {
        Self {
            api: api.to_owned(),
            tools: tools.to_vec(),
            products: OnceLock::new(),
            skills,
        }
    }

    /// The product index's text, made on first use.
    fn products(&self) -> &str {
        self.products
            .get_or_init(|| products_json(&self.api, &self.tools))
    }

    /// Whether any skill is served (the extension is declared then).
    pub fn has_skills(&self) -> bool {
        !self.skills.is_empty()
    }

    /// `resources/list`: `api://products` and each skill's `SKILL.md`.
    ///
    /// # Errors
    ///
    /// `-32602` for a cursor.
    pub fn list(
        &self,
        request: Option<&PaginatedRequestParams>,
    ) -> Result<ListResourcesResult, ErrorData> {
        no_cursor(request, "resources")?;
        let mut items = vec![
            Resource::new(PRODUCTS_URI, "products")
                .with_title("API products and tools")
                .with_description(
                    "The products this server exposes, each with its tools (name, title, HTTP method and path).",
                )
                .with_mime_type("application/json")
                .with_size(self.products().len() as u64),
        ];
        for skill in self.skills {
            let mut resource = Resource::new(skill.uri(SKILL_MD), skill.name)
                .with_description(skill.description)
                .with_mime_type("text/markdown");
            if let Some(file) = skill.skill_md() {
                resource = resource.with_size(file.size);
            }
            items.push(resource);
        }
        Ok(ListResourcesResult::with_all_items(items)
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    /// `resources/read` of `uri`.
    ///
    /// # Errors
    ///
    /// `-32602` when no resource has this URI.
    pub fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let contents = if uri == PRODUCTS_URI {
            ResourceContents::text(self.products(), uri).with_mime_type("application/json")
        } else {
            let (skill, file) = self
                .skill_file(uri)
                .ok_or_else(|| unknown(format!("unknown resource `{}`", clip(uri))))?;
            file_contents(&skill.uri(file.path), file)
        };
        Ok(ReadResourceResult::new(vec![contents])
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    /// `skills/list`: every skill with its complete manifest.
    ///
    /// # Errors
    ///
    /// `-32602` for a cursor.
    pub fn list_skills(
        &self,
        request: Option<&PaginatedRequestParams>,
    ) -> Result<ListSkillsResult, ErrorData> {
        no_cursor(request, "skills")?;
        Ok(
            ListSkillsResult::with_all_items(self.skills.iter().map(wire_skill).collect())
                .with_ttl_ms(CACHE_TTL_MS)
                .with_cache_scope(CacheScope::Public),
        )
    }

    /// `skills/get` of the skill whose `SKILL.md` has `uri`.
    ///
    /// # Errors
    ///
    /// `-32602` when no served skill has this URI.
    pub fn get_skill(&self, uri: &str) -> Result<GetSkillResult, ErrorData> {
        let skill = self
            .skills
            .iter()
            .find(|s| s.uri(SKILL_MD) == uri)
            .ok_or_else(|| unknown(format!("unknown skill `{}`", clip(uri))))?;
        let mut result = GetSkillResult::new(wire_skill(skill));
        result.ttl_ms = Some(CACHE_TTL_MS);
        result.cache_scope = Some(CacheScope::Public);
        Ok(result)
    }

    fn skill_file(&self, uri: &str) -> Option<(&'static Skill, &'static SkillFile)> {
        let rest = uri.strip_prefix("skill://")?;
        let (name, path) = rest.split_once('/')?;
        let skill = self.skills.iter().find(|s| s.name == name)?;
        Some((skill, skill.file(path)?))
    }
}

/// The product index: `{"api", "products": [{"name", "tools": [{"name",
/// "title", "method", "path"}]}]}`, products and tools in catalogue order.
fn products_json(api: &str, tools: &[&'static ToolDef]) -> String {
    /// One tool of the index; fields in the order the index has always had.
    #[derive(Serialize)]
    struct Entry {
        name: &'static str,
        title: &'static str,
        method: &'static str,
        path: &'static str,
    }
    #[derive(Serialize)]
    struct Product {
        name: &'static str,
        tools: Vec<Entry>,
    }
    #[derive(Serialize)]
    struct Index<'a> {
        api: &'a str,
        products: Vec<Product>,
    }
    let mut products: Vec<Product> = Vec::new();
    for tool in tools {
        let entry = Entry {
            name: tool.name,
            title: tool.title,
            method: tool.method.as_str(),
            path: tool.primary_path(),
        };
        match products.last_mut() {
            Some(product) if product.name == tool.product => product.tools.push(entry),
            _ => products.push(Product {
                name: tool.product,
                tools: vec![entry],
            }),
        }
    }
    let mut text = serde_json::to_string_pretty(&Index { api, products }).unwrap_or_default();
    text.push('\n');
    text
}

fn wire_skill(skill: &'static Skill) -> WireSkill {
    let mut frontmatter = SkillFrontmatter::new(skill.name, skill.description);
    if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(skill.frontmatter) {
        for (key, value) in fields {
            if key != "name" && key != "description" {
                frontmatter = frontmatter.with_field(key, value);
            }
        }
    }
    let files = skill
        .files
        .iter()
        .map(|f| SkillResource::new(skill.uri(f.path), format!("sha256:{}", f.sha256), f.size))
        .collect();
    WireSkill::new(
        skill.uri(SKILL_MD),
        frontmatter,
        SkillResources::Files(files),
    )
}

fn file_contents(uri: &str, file: &SkillFile) -> ResourceContents {
    match std::str::from_utf8(file.bytes) {
        Ok(text) if is_text_mime(file.mime) => {
            ResourceContents::text(text, uri).with_mime_type(file.mime)
        }
        _ => ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(file.bytes),
            uri,
        )
        .with_mime_type(file.mime),
    }
}

fn no_cursor(request: Option<&PaginatedRequestParams>, what: &str) -> Result<(), ErrorData> {
    if request.and_then(|r| r.cursor.as_ref()).is_some() {
        return Err(unknown(format!(
            "unknown cursor: this server lists all {what} in one page"
        )));
    }
    Ok(())
}

fn unknown(message: String) -> ErrorData {
    ErrorData::invalid_params(message, None)
}

fn clip(text: &str) -> String {
    text.chars().take(200).collect()
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
