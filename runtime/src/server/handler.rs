//! The rmcp [`ServerHandler`] over a [`Core`].

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetSkillRequestParams, GetSkillResult,
    InitializeResult, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::Core;
use crate::credential::Credential;

/// One handler per session (stdio) or per request (HTTP); cheap to clone.
#[derive(Debug, Clone)]
pub struct Handler {
    core: Arc<Core>,
    credential: Option<Credential>,
}

impl Handler {
    /// A handler whose calls use `credential` unless the HTTP layer supplies
    /// the authenticated client's credential.
    pub fn new(core: Arc<Core>, credential: Option<Credential>) -> Self {
        Self { core, credential }
    }

    fn credential<'a>(&'a self, ctx: &'a RequestContext<RoleServer>) -> Option<&'a Credential> {
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Credential>())
            .or(self.credential.as_ref())
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
        let with_output = self.core.output_schemas()
            || ctx
                .extensions
                .get::<http::request::Parts>()
                .is_some_and(|p| wants_output_schemas(p.uri.query()));
        Ok(ListToolsResult::with_all_items(vec![
            self.core.listing().placeholder(with_output),
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
        self.core
            .call_for(&request.name, request.arguments, credential, ctx.ct.clone())
            .await
            .map(CallToolResponse::from)
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
