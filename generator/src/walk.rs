//! What each node of an OpenAPI document is, as far as `$ref`s and schemas
//! go: the contexts every walk of a document shares (normalisation, the
//! cycle graph, the resolved spec, sharing). A leaf: it reads no other
//! module, so the loader's normalisation and the reference resolver can
//! both use it without reading each other.

/// What a node of an OpenAPI document is, as far as `$ref`s and schemas go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Ctx {
    /// The document root.
    Root,
    /// The `components` object.
    Components,
    /// Any other OpenAPI object (path item, operation, parameter, …).
    Node,
    /// A schema object.
    Schema,
    /// A map from names to schemas (`properties`, `components/schemas`).
    SchemaMap,
    /// A list of schemas (`allOf`, `prefixItems`, …).
    SchemaList,
    /// A map of Example objects.
    Examples,
    /// One Example object (only its own `$ref` is a reference).
    ExampleObj,
    /// Literal data (`example`, `default`, `enum`, `x-*`): never interpreted.
    Data,
}

impl Ctx {
    /// Whether an object in this context may be a reference object.
    pub(crate) fn holds_refs(self) -> bool {
        matches!(
            self,
            Ctx::Root | Ctx::Components | Ctx::Node | Ctx::Schema | Ctx::ExampleObj
        )
    }
}

/// The context of `parent[key]` (`key` is `None` for array elements).
pub(crate) fn child_ctx(parent: Ctx, key: Option<&str>) -> Ctx {
    let Some(key) = key else {
        return match parent {
            Ctx::Schema | Ctx::SchemaList => Ctx::Schema,
            Ctx::Data | Ctx::ExampleObj | Ctx::Examples | Ctx::SchemaMap => Ctx::Data,
            Ctx::Root | Ctx::Components | Ctx::Node => Ctx::Node,
        };
    };
    match parent {
        Ctx::Root => match key {
            "components" => Ctx::Components,
            k if k.starts_with("x-") => Ctx::Data,
            _ => Ctx::Node,
        },
        Ctx::Components => match key {
            "schemas" => Ctx::SchemaMap,
            "examples" => Ctx::Examples,
            k if k.starts_with("x-") => Ctx::Data,
            _ => Ctx::Node,
        },
        Ctx::Node => match key {
            "schema" => Ctx::Schema,
            "examples" => Ctx::Examples,
            "example" => Ctx::Data,
            k if k.starts_with("x-") => Ctx::Data,
            _ => Ctx::Node,
        },
        Ctx::Schema => schema_child_ctx(key),
        Ctx::SchemaMap => Ctx::Schema,
        Ctx::SchemaList => Ctx::Schema,
        Ctx::Examples => Ctx::ExampleObj,
        Ctx::ExampleObj | Ctx::Data => Ctx::Data,
    }
}

/// The context of a schema keyword's value.
pub(crate) fn schema_child_ctx(key: &str) -> Ctx {
    match key {
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
            Ctx::SchemaMap
        }
        "items"
        | "additionalProperties"
        | "not"
        | "if"
        | "then"
        | "else"
        | "contains"
        | "propertyNames"
        | "unevaluatedItems"
        | "unevaluatedProperties"
        | "additionalItems"
        | "contentSchema" => Ctx::Schema,
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => Ctx::SchemaList,
        _ => Ctx::Data,
    }
}
