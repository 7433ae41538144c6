//! Loopback fakes of the five paging conventions for the paging
//! end-to-end tests: each lists [`ITEMS`] items `it_1` … `it_7` (Larder's
//! `adj_00000001` …, as its output schema wants), pages them by the size
//! the request asks for, and answers the page numbered `fail_page` (1 is
//! the first) with a 500 in the API's own error shape.

use serde_json::{Value, json};

use crate::paging::query;
use crate::upstream::{Recorded, Reply, Upstream};

/// How many items every fake lists.
pub const ITEMS: usize = 7;

/// A paging convention and the server that speaks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Convention {
    /// Stripe's `starting_after` + `has_more` (`till-mcp`, `GET /customers`).
    LastItemId,
    /// `cursor` + `next_cursor` (`larder-mcp`, `GET /pantries/{id}/stock/adjustments`).
    CursorField,
    /// `page` + `result_info.total_pages` (`cloudflare-mcp`, `GET /accounts`).
    PageNumber,
    /// Graph's `@odata.nextLink` (`paging_mcp`, `GET /users`).
    NextUrl,
    /// GitHub's `Link: <…>; rel="next"` (`paging_mcp`, `GET /issues`).
    LinkHeader,
}

impl Convention {
    /// All five.
    pub const ALL: [Convention; 5] = [
        Convention::LastItemId,
        Convention::CursorField,
        Convention::PageNumber,
        Convention::NextUrl,
        Convention::LinkHeader,
    ];

    /// The id of item `i` (1-based).
    pub fn id(self, i: usize) -> String {
        match self {
            Convention::CursorField => format!("adj_{i:08}"),
            _ => format!("it_{i}"),
        }
    }

    /// The ids of all items, in order.
    pub fn ids(self) -> Vec<String> {
        (1..=ITEMS).map(|i| self.id(i)).collect()
    }

    /// The list's path (Code Mode's `api.paginate` path).
    pub fn path(self) -> &'static str {
        match self {
            Convention::LastItemId => "/customers",
            Convention::CursorField => "/pantries/pan_00000001/stock/adjustments",
            Convention::PageNumber => "/accounts",
            Convention::NextUrl => "/users",
            Convention::LinkHeader => "/issues",
        }
    }

    /// The direct tool listing the items.
    pub fn tool(self) -> &'static str {
        match self {
            Convention::LastItemId => "customers_list",
            Convention::CursorField => "list_stock_adjustments",
            Convention::PageNumber => "accounts_list",
            Convention::NextUrl => "users_list",
            Convention::LinkHeader => "issues_list",
        }
    }

    /// The page-size query parameter.
    pub fn size_param(self) -> &'static str {
        match self {
            Convention::LastItemId | Convention::CursorField => "limit",
            Convention::PageNumber | Convention::LinkHeader => "per_page",
            Convention::NextUrl => "$top",
        }
    }

    /// `(package, binary, environment)` of the server speaking it, with
    /// the token `key`.
    pub fn server(self, key: &str) -> (&'static str, &'static str, Value) {
        match self {
            Convention::LastItemId => ("till-tools", "till-mcp", json!({"TILL_BEARER_AUTH": key})),
            Convention::CursorField => (
                "larder-tools",
                "larder-mcp",
                json!({"LARDER_BEARER_AUTH": key}),
            ),
            Convention::PageNumber => (
                "cloudflare-tools",
                "cloudflare-mcp",
                json!({"CLOUDFLARE_API_TOKEN": key}),
            ),
            Convention::NextUrl => (
                "toolforge-tests",
                "paging_mcp",
                json!({"PAGING_TOKEN": key, "PAGING_CONVENTION": "next_url"}),
            ),
            Convention::LinkHeader => (
                "toolforge-tests",
                "paging_mcp",
                json!({"PAGING_TOKEN": key, "PAGING_CONVENTION": "link_header"}),
            ),
        }
    }

    /// Starts the fake.
    ///
    /// # Errors
    ///
    /// When the loopback listener cannot be bound.
    pub fn fake(self, fail_page: Option<usize>) -> std::io::Result<Upstream> {
        Upstream::start(move |req| answer(self, fail_page, req))
    }
}

/// `(start, size)` of the page `req` asks for: the index of its first
/// item and how many.
fn window(convention: Convention, req: &Recorded) -> (usize, usize) {
    let number = |name: &str| query(&req.target, name).and_then(|v| v.parse::<usize>().ok());
    let size = match convention {
        Convention::NextUrl => number("%24top").or_else(|| number("$top")),
        other => number(other.size_param()),
    }
    .unwrap_or(100)
    .max(1);
    let start = match convention {
        Convention::LastItemId => query(&req.target, "starting_after")
            .and_then(|after| convention.ids().iter().position(|id| id == after))
            .map_or(0, |i| i + 1),
        Convention::CursorField => query(&req.target, "cursor")
            .and_then(|c| c.strip_prefix('c')?.parse().ok())
            .unwrap_or(0),
        Convention::PageNumber | Convention::LinkHeader => {
            number("page").unwrap_or(1).saturating_sub(1) * size
        }
        Convention::NextUrl => query(&req.target, "%24skiptoken")
            .or_else(|| query(&req.target, "$skiptoken"))
            .and_then(|t| t.strip_prefix('s')?.parse().ok())
            .unwrap_or(0),
    };
    (start, size)
}

fn answer(convention: Convention, fail_page: Option<usize>, req: &Recorded) -> Reply {
    if req.path() != convention.path() {
        return Reply::json(404, &json!({"message": "Not Found"}));
    }
    let (start, size) = window(convention, req);
    if fail_page == Some(start / size + 1) {
        return failure(convention);
    }
    let end = (start + size).min(ITEMS);
    let items: Vec<Value> = (start + 1..=end).map(|i| item(convention, i)).collect();
    let more = end < ITEMS;
    let origin = format!("http://{}", req.header("host").unwrap_or("127.0.0.1"));
    match convention {
        Convention::LastItemId => Reply::json(
            200,
            &json!({"object": "list", "url": "/v1/customers", "has_more": more, "data": items}),
        ),
        Convention::CursorField => Reply::json(
            200,
            &json!({"data": items, "next_cursor": if more { json!(format!("c{end}")) } else { Value::Null }}),
        ),
        Convention::PageNumber => Reply::json(
            200,
            &json!({"success": true, "errors": [], "messages": [], "result": items,
                    "result_info": {"page": start / size + 1, "per_page": size, "count": end - start,
                                    "total_count": ITEMS, "total_pages": ITEMS.div_ceil(size)}}),
        ),
        Convention::NextUrl => {
            let mut body = json!({"value": items});
            if more {
                body["@odata.nextLink"] =
                    json!(format!("{origin}/users?%24top={size}&%24skiptoken=s{end}"));
            }
            Reply::json(200, &body)
        }
        Convention::LinkHeader => {
            let reply = Reply::json(200, &Value::Array(items));
            let page = start / size + 1;
            let last = format!(
                "<{origin}/issues?per_page={size}&page={}>; rel=\"last\"",
                ITEMS.div_ceil(size)
            );
            if more {
                let next = format!(
                    "<{origin}/issues?per_page={size}&page={}>; rel=\"next\", {last}",
                    page + 1
                );
                reply.with_header("link", &next)
            } else {
                reply.with_header(
                    "link",
                    &format!("<{origin}/issues?per_page={size}&page=1>; rel=\"first\""),
                )
            }
        }
    }
}

fn item(convention: Convention, i: usize) -> Value {
    let id = convention.id(i);
    match convention {
        Convention::LastItemId => json!({"id": id, "object": "customer", "created": 1}),
        Convention::CursorField => {
            json!({"id": id, "item_id": "itm_ab12cd34", "delta": 1, "reason": "used", "at": "2026-03-02T19:12:00Z"})
        }
        Convention::PageNumber => json!({"id": id, "name": format!("Account {i}")}),
        Convention::NextUrl | Convention::LinkHeader => json!({"id": id}),
    }
}

/// The API's own 500, with an error code where the API has one.
fn failure(convention: Convention) -> Reply {
    match convention {
        Convention::PageNumber => Reply::cf_error(500, 1000, "Try again later"),
        Convention::LinkHeader => Reply::json(500, &json!({"message": "Try again later"})),
        Convention::CursorField => Reply::json(
            500,
            &json!({"errors": [{"code": "lock_timeout", "message": "Try again later"}]}),
        ),
        Convention::LastItemId | Convention::NextUrl => Reply::json(
            500,
            &json!({"error": {"code": "lock_timeout", "message": "Try again later"}}),
        ),
    }
}
