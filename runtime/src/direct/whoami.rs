//! The `whoami` tool: the credential's identity as a stable string
//! (`user:<id>`, `account:<id>`), found by the profile's identity probes
//! ([`super::identity`]) and cached per credential.
//!
//! It is listed in every mode (beside the operations in direct mode, the
//! `code` tool, or `search` and `execute`) when the profile declares an
//! identity. It takes no arguments and needs no sandbox: clients connected
//! to several accounts call it to tell them apart before writing code.
//! When the API itself has a tool named `whoami`, the API's keeps the name
//! and this one is [`FALLBACK_NAME`].

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::{Map, Value};

use crate::catalogue::{Annotations, Catalogue, Envelope, Method, SharedText, ToolDef};

/// The tool's name.
pub const NAME: &str = "whoami";
/// Its name when the API has a tool named [`NAME`].
pub const FALLBACK_NAME: &str = "toolforge_whoami";

const DESCRIPTION: &str = "The API credential's owner: `identity` (stable `<kind>:<id>`, e.g. `user:<id>`) and `name` if known; never the credential. Tells servers on different accounts apart.";
const INPUT_SCHEMA: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;
const OUTPUT_SCHEMA: &str = r#"{"type":"object","properties":{"identity":{"type":"string","description":"`<kind>:<id>`, stable for the credential"},"name":{"type":"string","description":"Display name, when the API gives one"}},"required":["identity"]}"#;

const fn def(name: &'static str) -> ToolDef {
    ToolDef {
        name,
        operation_id: name,
        product: "toolforge",
        title: "Who am I",
        description: DESCRIPTION,
        input_schema: SharedText::Text(INPUT_SCHEMA),
        output_schema: Some(SharedText::Text(OUTPUT_SCHEMA)),
        annotations: Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: true,
        },
        permissions: &[],
        method: Method::Get,
        routes: &[],
        params: &[],
        body: None,
        responses: &[],
        envelope: Envelope::None,
        deprecated: false,
        security: &[],
        ts_declaration: crate::catalogue::SharedText::Text(""),
    }
}

static WHOAMI: ToolDef = def(NAME);
static FALLBACK: ToolDef = def(FALLBACK_NAME);

/// The `whoami` tool of `catalogue`: `None` when its profile declares no
/// identity (or the API has tools of both names).
pub fn tool(catalogue: &Catalogue) -> Option<&'static ToolDef> {
    catalogue.profile.identity?;
    [&WHOAMI, &FALLBACK]
        .into_iter()
        .find(|t| catalogue.tool(t.name).is_none())
}

/// Whether `tool` is one of this module's definitions.
pub fn is_whoami(tool: &ToolDef) -> bool {
    std::ptr::eq(tool, &WHOAMI) || std::ptr::eq(tool, &FALLBACK)
}

/// The refusal of arguments (`whoami` takes none): the error text.
pub fn check_arguments(name: &str, arguments: Option<&JsonObject>) -> Result<(), String> {
    match arguments.and_then(|a| a.keys().next()) {
        None => Ok(()),
        Some(key) => {
            let shown: String = key.chars().take(80).collect();
            Err(format!(
                "invalid arguments for tool `{name}`: unknown argument `{shown}`; it takes none"
            ))
        }
    }
}

/// The result for an identity: the JSON text and `structuredContent`.
pub fn result(identity: &str, name: Option<&str>) -> CallToolResult {
    let mut out = Map::new();
    out.insert("identity".into(), Value::String(identity.to_owned()));
    if let Some(name) = name {
        out.insert("name".into(), Value::String(name.to_owned()));
    }
    let value = Value::Object(out);
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Identity, IdentityProbe, Profile};

    static PROBES: &[IdentityProbe] = &[IdentityProbe {
        path: "/me",
        only: None,
        id: "/id",
        name: None,
        prefix: "user",
    }];

    fn catalogue(identity: Option<Identity>, tools: &'static [ToolDef]) -> Catalogue {
        let products: &'static [crate::catalogue::Product] =
            Box::leak(Box::new([crate::catalogue::Product { name: "p", tools }]));
        Catalogue {
            api: "example",
            profile: Profile {
                identity,
                ..Profile::generic("EXAMPLE_API_TOKEN")
            },
            products,
            source: "{}",
            spec: "",
            skills: &[],
        }
    }

    #[test]
    fn listed_only_with_an_identity_and_renamed_on_a_clash() {
        let identity = Some(Identity { probes: PROBES });
        assert!(tool(&catalogue(None, &[])).is_none());
        let ours = tool(&catalogue(identity, &[])).unwrap();
        assert_eq!(ours.name, NAME);
        assert!(is_whoami(ours) && ours.annotations.read_only);
        static API_WHOAMI: ToolDef = def(NAME);
        let clash = tool(&catalogue(identity, std::slice::from_ref(&API_WHOAMI))).unwrap();
        assert_eq!(clash.name, FALLBACK_NAME);
        assert!(!is_whoami(&API_WHOAMI));
    }

    #[test]
    fn result_and_arguments() {
        let r = result("user:1", Some("Sam"));
        assert_eq!(
            r.structured_content,
            Some(serde_json::json!({"identity": "user:1", "name": "Sam"}))
        );
        assert!(check_arguments(NAME, None).is_ok());
        let mut args = JsonObject::new();
        assert!(check_arguments(NAME, Some(&args)).is_ok());
        args.insert("x".into(), Value::Null);
        assert!(check_arguments(NAME, Some(&args)).is_err());
    }
}
