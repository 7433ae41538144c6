//! The rmcp [`ServerHandler`] over a [`Core`].
//!
//! Besides the catalogue it serves the MCP `logging` capability: after
//! `logging/setLevel`, each `tools/call` sends one `notifications/message`
//! (logger `toolforge`) at `info` (success) or `warning` (tool error) when
//! that is at or above the chosen level, with the tool name, the outcome
//! and the time taken: never arguments, results or credentials. The level
//! lives with the handler, so it holds for a stdio session; stateless HTTP
//! has no session, so there it applies to nothing after the answer. A Code
//! Mode `execute` whose request carries a progress token sends one
//! `notifications/progress` per API request, before the request is made.
#![allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients still use it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetSkillRequestParams, GetSkillResult,
    InitializeResult, ListResourcesResult, ListSkillsResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ReadResourceRequestParams, ReadResourceResponse, SetLevelRequestParams, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

use super::Core;
use crate::authz::Connection;
use crate::credential::Credential;
use crate::listing::{NarrowedSlot, Variant};

/// One handler per session (stdio) or per request (HTTP); cheap to clone.
#[derive(Debug, Clone)]
pub struct Handler {
    core: Arc<Core>,
    credential: Option<Credential>,
    /// The level chosen with `logging/setLevel` (none: no notifications).
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
}

/// Rank of a level, for "at or above".
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl Handler {
    /// A handler whose calls use `credential` unless the HTTP layer supplies
    /// the authenticated client's credential.
    pub fn new(core: Arc<Core>, credential: Option<Credential>) -> Self {
        Self {
            core,
            credential,
            log_level: Arc::new(Mutex::new(None)),
        }
    }

    fn log_level(&self) -> Option<LoggingLevel> {
        self.log_level.lock().ok().and_then(|l| *l)
    }

    fn credential<'a>(&'a self, ctx: &'a RequestContext<RoleServer>) -> Option<&'a Credential> {
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Credential>())
            .or(self.credential.as_ref())
    }

    /// How the request's caller is connected: set by the HTTP layer's
    /// authentication; the server's own credential otherwise (stdio).
    fn connection(ctx: &RequestContext<RoleServer>) -> Connection {
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Connection>())
            .cloned()
            .unwrap_or_default()
    }
}

/// `?output_schemas=1` (or `true`) in a request URI's query.
pub fn wants_output_schemas(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, "1"));
            k == "output_schemas" && matches!(v, "1" | "true" | "yes" | "")
        })
    })
}

/// The listing a `tools/list` request gets: output schemas as the server
/// or the URL says, and the schema profile its client reads (see
/// [`crate::schema_profile`]: from this request alone).
fn listing_variant(core: &Core, ctx: &RequestContext<RoleServer>) -> Variant {
    let parts = ctx.extensions.get::<http::request::Parts>();
    let query = parts.and_then(|p| p.uri.query());
    let with_output = core.output_schemas() || wants_output_schemas(query);
    let meta_name = ctx.meta.client_info().map(|i| i.name);
    let initialize_name = ctx.peer.peer_info().map(|i| i.client_info.name.clone());
    let user_agent = parts
        .and_then(|p| p.headers.get(http::header::USER_AGENT))
        .and_then(|v| v.to_str().ok());
    let names = [meta_name.as_deref(), initialize_name.as_deref(), user_agent];
    let profile = core
        .schema_choice()
        .choose(query, names.into_iter().flatten());
    Variant::new(profile, with_output)
}

impl ServerHandler for Handler {
    fn get_info(&self) -> InitializeResult {
        self.core.info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if request.as_ref().and_then(|r| r.cursor.as_ref()).is_some() {
            return Err(ErrorData::invalid_params(
                "unknown cursor: this server lists all tools in one page",
                None,
            ));
        }
        let variant = listing_variant(&self.core, &ctx);
        let connection = Self::connection(&ctx);
        if Core::lists_differently(&connection) {
            // Over HTTP the response layer writes the kept listing in place
            // of a placeholder (as it does the shared one).
            let slot = ctx
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<NarrowedSlot>());
            if let Some(slot) = slot
                && let Some(bytes) = self.core.narrowed_listing(&connection, variant)
            {
                slot.put(bytes);
                return Ok(ListToolsResult::with_all_items(vec![
                    self.core.listing().narrowed_placeholder(),
                ]));
            }
            return Ok(ListToolsResult::with_all_items(
                self.core.listed_for(&connection, variant),
            ));
        }
        Ok(ListToolsResult::with_all_items(vec![
            self.core.listing().placeholder(variant),
        ]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.core.tool(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let credential = self.credential(&ctx);
        let connection = Self::connection(&ctx);
        let token = request
            .meta
            .as_ref()
            .and_then(|m| m.get_progress_token())
            .or_else(|| ctx.meta.get_progress_token());
        let progress: Option<crate::progress::ProgressFn> = token.map(|token| {
            let peer = ctx.peer.clone();
            let f: crate::progress::ProgressFn = Arc::new(move |n, message| {
                let peer = peer.clone();
                let token = token.clone();
                Box::pin(async move {
                    let mut param = ProgressNotificationParam::new(token, f64::from(n));
                    param.message = Some(message);
                    let _ = peer.notify_progress(param).await;
                })
            });
            f
        });
        let started = Instant::now();
        let name = request.name.clone();
        let result = self
            .core
            .call_observed(
                &name,
                request.arguments,
                credential,
                &connection,
                ctx.ct.clone(),
                progress,
            )
            .await;
        if let (Some(min), Ok(result)) = (self.log_level(), &result) {
            let failed = result.is_error == Some(true);
            let level = if failed {
                LoggingLevel::Warning
            } else {
                LoggingLevel::Info
            };
            if rank(level) >= rank(min) && self.core.tool(&name).is_some() {
                let data = json!({
                    "event": "tools/call",
                    "tool": name,
                    "outcome": if failed { "tool_error" } else { "ok" },
                    "elapsed_ms": (started.elapsed().as_secs_f64() * 1000.0).round(),
                });
                let mut param = LoggingMessageNotificationParam::new(level, data);
                param.logger = Some("toolforge".into());
                let _ = ctx.peer.notify_logging_message(param).await;
            }
        }
        result.map(CallToolResponse::from)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.log_level.lock() {
            *level = Some(request.level);
        }
        Ok(())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.core.resources().list(request.as_ref())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.core.resources().read(&request.uri).map(Into::into)
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.core.resources().list_skills(request.as_ref())
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.core.resources().get_skill(&request.uri)
    }
}

#[cfg(test)]
mod tests {
    use super::wants_output_schemas;

    #[test]
    fn output_schema_query_flag() {
        assert!(wants_output_schemas(Some("output_schemas=1")));
        assert!(wants_output_schemas(Some("a=b&output_schemas=true")));
        assert!(wants_output_schemas(Some("output_schemas")));
        assert!(!wants_output_schemas(Some("output_schemas=0")));
        assert!(!wants_output_schemas(Some("x=1")));
        assert!(!wants_output_schemas(None));
    }
}
