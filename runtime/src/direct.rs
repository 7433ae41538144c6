//! The direct tool pipeline shared by every mode: validate the arguments
//! against the tool's input schema, fill an omitted account argument as the
//! catalogue's profile says, build the request, send it with the caller's
//! credential and map the response.
//!
//! `--mode direct` lists these tools one by one; `--mode code` reaches them
//! from sandboxed JavaScript (`codemode.<tool>(args)`), and `--mode codemode`
//! uses the upstream client and the account cache for `api.request`. The
//! state is shared (`Arc<Direct>`) so a sandbox host can hold it.
//!
//! It sits below both the server and Code Mode (`server` → `codemode` →
//! `direct`): what a call needs besides the request — the account and
//! identity caches, the paging hints, the `whoami` tool — lives here with
//! it, so neither transport code nor the sandbox host is named from below.

pub mod accounts;
pub mod after_answer;
pub mod identity;
pub mod paging;
pub mod whoami;

use std::collections::HashMap;
use std::sync::OnceLock;

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;

use crate::authz::Connection;
use crate::catalogue::{Catalogue, ToolDef};
use crate::credential::Credential;
use crate::metrics::CallOutcome;
use crate::outcome::{Call, map_parsed, parse_body, tool_error};
use crate::profile::{AccountFill, Profile};
use crate::request::{Args, build_request};
use crate::schema_check::SchemaChecks;
use crate::security::Requirement;
use crate::upstream::{Upstream, path_only};
use crate::validate::Validators;
use accounts::AccountCache;
use identity::{IdentityCache, Lookup};

/// The exposed catalogue tools and what it takes to call them.
#[derive(Debug)]
pub struct Direct {
    catalogue: &'static Catalogue,
    tools: Vec<&'static ToolDef>,
    index: HashMap<&'static str, usize>,
    validators: Validators,
    closed_outputs: paging::ClosedOutputs,
    upstream: Upstream,
    accounts: AccountCache,
    identities: IdentityCache,
    probe_security: Vec<Option<Requirement>>,
    max_argument_bytes: usize,
    credential_hint: String,
    schema_checks: OnceLock<SchemaChecks>,
}

impl Direct {
    /// The pipeline over `tools` (the exposed ones, in catalogue order).
    pub(crate) fn new(
        catalogue: &'static Catalogue,
        tools: Vec<&'static ToolDef>,
        upstream: Upstream,
        max_argument_bytes: usize,
        credential_hint: String,
    ) -> Self {
        let index = tools.iter().enumerate().map(|(i, t)| (t.name, i)).collect();
        // An identity probe that is one of the API's operations needs that
        // operation's credentials; others the profile's global ones.
        let probe_security = catalogue
            .profile
            .identity
            .map(|identity| {
                identity
                    .probes
                    .iter()
                    .map(|probe| {
                        catalogue
                            .tools()
                            .find(|t| {
                                t.method == crate::catalogue::Method::Get
                                    && t.routes.iter().any(|r| r.template == probe.shown_path())
                            })
                            .map(|t| t.security)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            catalogue,
            validators: Validators::new(tools.len()),
            closed_outputs: paging::ClosedOutputs::new(tools.len()),
            tools,
            index,
            upstream,
            accounts: AccountCache::default(),
            identities: IdentityCache::default(),
            probe_security,
            max_argument_bytes,
            credential_hint,
            schema_checks: OnceLock::new(),
        }
    }

    /// Checks a `rate` share of upstream responses against the tools'
    /// response schemas from now on (see [`crate::schema_check`]); a
    /// second call changes nothing.
    pub fn enable_schema_checks(&self, rate: f64) {
        let _ = self.schema_checks.get_or_init(|| SchemaChecks::start(rate));
    }

    /// The catalogue.
    pub fn catalogue(&self) -> &'static Catalogue {
        self.catalogue
    }

    /// The exposed tools.
    pub fn tools(&self) -> &[&'static ToolDef] {
        &self.tools
    }

    /// Index and definition of an exposed tool.
    pub fn lookup(&self, name: &str) -> Option<(usize, &'static ToolDef)> {
        let &i = self.index.get(name)?;
        self.tools.get(i).map(|&t| (i, t))
    }

    /// The upstream client.
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// The per-credential default-account cache.
    pub fn accounts(&self) -> &AccountCache {
        &self.accounts
    }

    /// The catalogue's profile (envelope, account filling, refusal texts).
    pub fn profile(&self) -> &'static Profile {
        &self.catalogue.profile
    }

    /// Largest accepted tool arguments (approximate JSON bytes).
    pub fn max_argument_bytes(&self) -> usize {
        self.max_argument_bytes
    }

    /// The error result for a call without an upstream credential.
    pub fn no_credential(&self, what: &str) -> CallToolResult {
        tool_error(format!(
            "no upstream credential is configured for this server, so {what} cannot call the API; the operator must {}",
            self.credential_hint
        ))
    }

    /// Runs exposed tool number `index` (see [`Direct::lookup`]).
    pub async fn run(
        &self,
        index: usize,
        tool: &'static ToolDef,
        arguments: Option<JsonObject>,
        credential: Option<&Credential>,
        connection: &Connection,
    ) -> CallToolResult {
        self.run_outcome(index, tool, arguments, credential, connection)
            .await
            .0
    }

    /// [`Direct::run`], also saying how the call ended (for the metrics).
    pub async fn run_outcome(
        &self,
        index: usize,
        tool: &'static ToolDef,
        arguments: Option<JsonObject>,
        credential: Option<&Credential>,
        connection: &Connection,
    ) -> (CallToolResult, CallOutcome) {
        let invalid = |text: String| (tool_error(text), CallOutcome::InvalidArguments);
        // Outside the grant's exposure: refused before anything else, so a
        // hidden tool reveals nothing about its arguments either.
        if let Some(refusal) = crate::authz::hidden_refusal(connection, tool) {
            return (tool_error(refusal), CallOutcome::Refused);
        }
        let mut args = arguments.unwrap_or_default();
        // A scoped URL's values fill the arguments it took out of the schema.
        if let Some(scope) = connection.path_scope()
            && let Err(refusal) = scope.fill(tool, &mut args, self.profile().merged.as_ref())
        {
            return (tool_error(refusal), CallOutcome::Refused);
        }
        let value = Value::Object(std::mem::take(&mut args));
        if let Err(e) = self.validators.validate(index, tool, &value) {
            return invalid(e.to_string());
        }
        let Value::Object(taken) = value else {
            return invalid("internal error: arguments are not an object".into());
        };
        args = taken;
        let Some(credential) = credential else {
            let refused = self.no_credential(&format!("`{}`", tool.name));
            return (refused, CallOutcome::Refused);
        };
        if let Err(e) = self.fill_account(tool, &mut args, credential).await {
            return (tool_error(e), CallOutcome::ToolError);
        }
        let request = match build_request(tool, &args) {
            Ok(r) => r,
            Err(e) => return invalid(e.to_string()),
        };
        // Another account or zone than the scoped URL's: never sent.
        if let Some(scope) = connection.path_scope()
            && let Err(refusal) = scope.check_path(
                tool,
                path_only(&request.path_and_query),
                self.profile().merged.as_ref(),
            )
        {
            return (tool_error(refusal), CallOutcome::Refused);
        }
        match self.upstream.send(&request, Some(credential)).await {
            Ok(resp) => {
                if let Some(check) = self
                    .schema_checks
                    .get()
                    .and_then(|checks| checks.take(tool, resp.status.as_u16(), &resp.body))
                {
                    after_answer::after_this_poll(move || check.queue());
                }
                let refused = matches!(resp.status.as_u16(), 401 | 403);
                if refused && let Connection::OAuth(grant) = connection {
                    grant.refused(tool, path_only(&request.path_and_query));
                }
                let url = format!(
                    "{}{}",
                    self.upstream.base(),
                    path_only(&request.path_and_query)
                );
                let json = parse_body(&resp.body);
                let next = resp
                    .status
                    .is_success()
                    .then(|| {
                        paging::next_page(self.profile(), tool, &args, &url, &resp, json.as_ref())
                    })
                    .flatten();
                let call = Call {
                    tool,
                    path: path_only(&request.path_and_query),
                    credential: Some(credential),
                    profile: self.profile(),
                    connection,
                };
                let mut result = map_parsed(call, resp, json);
                if let Some(next) = next {
                    let closed = self.closed_outputs.of(index, tool);
                    paging::annotate(&mut result, tool, next, closed);
                }
                let outcome = match CallOutcome::of(&result) {
                    CallOutcome::ToolError if refused => CallOutcome::Refused,
                    other => other,
                };
                (result, outcome)
            }
            Err(e) => (
                tool_error(credential.redact(&e.to_string())),
                CallOutcome::ToolError,
            ),
        }
    }

    /// The `whoami` tool named `name`: the credential's identity from the
    /// profile's probes (cached per credential), or a tool error without
    /// the credential.
    pub async fn whoami(
        &self,
        name: &str,
        arguments: Option<&rmcp::model::JsonObject>,
        credential: Option<&Credential>,
    ) -> CallToolResult {
        if let Err(refused) = whoami::check_arguments(name, arguments) {
            return tool_error(refused);
        }
        let Some(identity) = &self.profile().identity else {
            return tool_error(format!("`{name}`: this API's profile declares no identity"));
        };
        let Some(credential) = credential else {
            return self.no_credential(&format!("`{name}`"));
        };
        let lookup = Lookup {
            identity,
            envelope: self.profile().envelope,
            upstream: &self.upstream,
            security: &self.probe_security,
        };
        match self.identities.whoami(lookup, credential).await {
            Ok(who) => whoami::result(&who.identity, who.name.as_deref()),
            Err(e) => tool_error(credential.redact(&e.to_string())),
        }
    }

    /// Fills an omitted account argument of `tool` with the credential's only
    /// account, when the profile fills accounts; the error text is already
    /// redacted.
    pub(crate) async fn fill_account(
        &self,
        tool: &'static ToolDef,
        args: &mut Args,
        credential: &Credential,
    ) -> Result<(), String> {
        let profile = self.profile();
        if let AccountFill::FromList(list) = &profile.accounts
            && let Some(arg) = profile.account_slot(tool, args)
        {
            self.accounts
                .fill(
                    list,
                    self.profile().envelope,
                    tool,
                    arg,
                    args,
                    &self.upstream,
                    Some(credential),
                )
                .await
                .map_err(|e| credential.redact(&e.to_string()))?;
        }
        Ok(())
    }
}
