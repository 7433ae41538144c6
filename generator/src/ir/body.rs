//! The shape of an API's response bodies, as data: where the payload,
//! errors and page metadata are ([`BodyEnvelope`]) and how lists page
//! ([`Pagination`]). Kept apart from the rest of the IR because the
//! policy, forge.json and the runtime's profile all speak it.

use serde::Serialize;

/// How an API pages its lists (`toolforge_runtime::profile::Pagination`):
/// inferred from the spec, or forge.json `pagination`. Pointers are JSON
/// pointers into the raw answer.
#[derive(
    Debug, Clone, Default, Serialize, serde::Deserialize, schemars::JsonSchema, PartialEq, Eq,
)]
#[serde(tag = "convention", rename_all = "snake_case", deny_unknown_fields)]
pub enum Pagination {
    /// Lists are not paged, or the convention is unknown.
    #[default]
    None,
    /// The cursor is the last item's ID, sent while `more` is true:
    /// `{"convention": "last_item_id", "param": "starting_after", "more": "/has_more", "id": "/id"}`.
    LastItemId {
        /// Query parameter taking the cursor.
        param: String,
        /// Boolean saying another page follows.
        #[schemars(regex(pattern = r"^(/.*)?$"))]
        more: String,
        /// In an item, its ID.
        #[schemars(regex(pattern = r"^(/.*)?$"))]
        id: String,
    },
    /// The answer holds the next cursor (empty on the last page):
    /// `{"convention": "cursor_field", "param": "cursor", "cursor": "/response_metadata/next_cursor"}`.
    CursorField {
        /// Query parameter taking the cursor.
        param: String,
        /// The next cursor in the answer.
        #[schemars(regex(pattern = r"^(/.*)?$"))]
        cursor: String,
    },
    /// The answer holds the next page's URL (absent or null on the last
    /// page): `{"convention": "next_url", "next": "/@odata.nextLink"}`.
    NextUrl {
        /// The next page's URL in the answer.
        #[schemars(regex(pattern = r"^(/.*)?$"))]
        next: String,
    },
    /// The answer's `Link` header names the next page (`rel="next"`, as
    /// GitHub): `{"convention": "link_header"}`.
    LinkHeader,
    /// Numbered pages while `page < total_pages`:
    /// `{"convention": "page_number", "param": "page", "page": "/meta/page", "total_pages": "/meta/pages"}`.
    PageNumber {
        /// Query parameter taking the page number.
        param: String,
        /// The current page number in the answer.
        #[schemars(regex(pattern = r"^(/.*)?$"))]
        page: String,
        /// The number of pages in the answer.
        #[schemars(regex(pattern = r"^(/.*)?$"))]
        total_pages: String,
    },
}

impl Pagination {
    /// The convention's name, as forge.json spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::LastItemId { .. } => "last_item_id",
            Self::CursorField { .. } => "cursor_field",
            Self::NextUrl { .. } => "next_url",
            Self::LinkHeader => "link_header",
            Self::PageNumber { .. } => "page_number",
        }
    }

    /// Its JSON pointers, to check them.
    pub fn pointers(&self) -> Vec<&str> {
        match self {
            Self::None | Self::LinkHeader => Vec::new(),
            Self::LastItemId { more, id, .. } => vec![more, id],
            Self::CursorField { cursor, .. } => vec![cursor],
            Self::NextUrl { next } => vec![next],
            Self::PageNumber {
                page, total_pages, ..
            } => vec![page, total_pages],
        }
    }
}

/// Where things are in an API's response bodies, as JSON pointers
/// (`toolforge_runtime::profile::BodyEnvelope`, whose `BARE` value
/// [`BodyEnvelope::bare`] mirrors).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BodyEnvelope {
    /// The payload of a successful body (`""`: the whole body).
    pub payload: String,
    /// A boolean that is `false` on failure even with a 2xx status.
    pub failure_flag: Option<String>,
    /// The errors: an array of error objects or one object.
    pub errors: String,
    /// In an error object, its message.
    pub error_message: String,
    /// In an error object, its code.
    pub error_code: String,
    /// Page metadata beside the payload.
    pub page: Option<String>,
    /// In a list payload that is an object, its items.
    pub items: Option<String>,
}

impl BodyEnvelope {
    /// Bare bodies (the runtime's `BodyEnvelope::BARE`).
    pub fn bare() -> Self {
        Self {
            payload: String::new(),
            failure_flag: None,
            errors: "/errors".to_owned(),
            error_message: "/message".to_owned(),
            error_code: "/code".to_owned(),
            page: None,
            items: None,
        }
    }
}
