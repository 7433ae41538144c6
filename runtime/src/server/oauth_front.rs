//! The MCP server's side of `--auth oauth`: the authorization server
//! (`toolforge-oauth`) knows grants, tokens and scopes, not tools; this
//! front gives it what it needs from the profile (the scoped URLs, a hook
//! for the metrics, the peer address for its per-address limits, the
//! `/readyz` check) and turns its sessions into the authorization
//! decision's [`Connection`] and a recorded step-up into its challenge.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Deref;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::response::Response;

use crate::authz::{ChallengeSlot, Connection, GrantAccess, PathScope, ScopeRule, ScopeTable};
use crate::catalogue::Catalogue;
use crate::oauth::events::AuthEvent;
use crate::oauth::limits::ClientAddr;
use crate::oauth::server::ScopedUrls;
use crate::oauth::server::step_up::{self, Challenge, Delivery};
use crate::oauth::store::GrantStore;
use crate::oauth::{OAuthServer, OAuthSetup, Rejection, Session};
use crate::profile::{Profile, ScopedPath, SkillGroup};
use crate::server::connections::PeerAddr;
use crate::server::health::{ReadinessCheck, ReadinessFuture};

/// The profile's scoped paths, as the authorization server asks about them.
#[derive(Debug)]
struct ProfileScopes(&'static [ScopedPath]);

impl ScopedUrls for ProfileScopes {
    fn canonical(&self, suffix: &str) -> Option<String> {
        crate::authz::parse_scope(self.0, suffix).map(|scope| scope.suffix)
    }
}

/// The running authorization server with what the MCP server adds to it.
#[derive(Debug)]
pub struct OAuthFront {
    server: Arc<OAuthServer>,
    /// The scope catalogue as the authorization decision reads it.
    scope_table: Arc<ScopeTable>,
    scoped: &'static [ScopedPath],
    groups: &'static [SkillGroup],
}

/// Everything the authorization server itself answers.
impl Deref for OAuthFront {
    type Target = OAuthServer;

    fn deref(&self) -> &OAuthServer {
        &self.server
    }
}

impl OAuthFront {
    /// The authorization server for `setup` bound to `port`, issuing tokens
    /// for `/mcp` and the scoped URLs of `profile`.
    pub fn new(setup: Arc<OAuthSetup>, port: u16, profile: &'static Profile) -> Arc<Self> {
        crate::oauth::events::set_hook(count);
        let scope_table = Arc::new(scope_table(&setup));
        let scoped = profile.scoped_paths;
        let server = OAuthServer::new(setup, port, Arc::new(ProfileScopes(scoped)));
        Arc::new(Self {
            server,
            scope_table,
            scoped,
            groups: profile.skill_groups,
        })
    }

    /// The authorization server's routes, each request carrying its TCP
    /// peer's address for the per-address limits.
    pub fn routes(&self) -> Router {
        self.server
            .routes()
            .layer(axum::middleware::map_request(client_addr))
    }

    /// The RFC 9728 metadata URL of `/mcp` or of a scoped URL.
    pub fn resource_metadata_url_at(&self, scope: Option<&PathScope>) -> String {
        self.server
            .resource_metadata_url_at(scope.map(|s| s.suffix.as_str()))
    }

    /// Checks a bearer token at `/mcp` or at a scoped URL.
    ///
    /// # Errors
    ///
    /// See [`Rejection`].
    pub async fn authenticate_at(
        &self,
        bearer: &str,
        scope: Option<&Arc<PathScope>>,
    ) -> Result<Session, Rejection> {
        self.server
            .authenticate_at(bearer, scope.map(|s| s.suffix.as_str()))
            .await
    }

    /// The authorization decision's view of an authenticated session.
    pub fn connection(&self, session: &Session) -> Connection {
        let path = session
            .scoped
            .as_deref()
            .and_then(|suffix| crate::authz::parse_scope(self.scoped, suffix))
            .map(Arc::new);
        Connection::OAuth(Arc::new(GrantAccess {
            grant_id: session.grant_id.clone(),
            scopes: session.scopes.clone(),
            read_only: session.exposure.read_only,
            products: session.exposure.products.clone(),
            catalogue: Arc::clone(&self.scope_table),
            step_up: ChallengeSlot::default(),
            path,
            groups: self.groups,
        }))
    }
}

/// `resp`, or the step-up challenge in its place when the request's
/// surfaces recorded one on `grant` (see `oauth::server::step_up`).
pub async fn respond(
    front: &OAuthFront,
    grant: &GrantAccess,
    client_id: &str,
    delivery: Option<Delivery>,
    resp: Response,
) -> Response {
    let recorded = grant.step_up.take();
    let asked = recorded.as_ref().map(|s| Challenge {
        grant_id: &grant.grant_id,
        held: &grant.scopes,
        scoped: grant.path.as_deref().map(|p| p.suffix.as_str()),
        scope: &s.scope,
        request: &s.request,
    });
    step_up::respond(&front.server, asked, client_id, delivery, resp).await
}

/// Each skill the consent page offers and the permissions of its tools:
/// the catalogue's skill groups when it has some, else one per product.
pub fn skills_of(catalogue: &Catalogue) -> BTreeMap<String, BTreeSet<String>> {
    let mut skills: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let groups = catalogue.profile.skill_groups;
    for product in catalogue.products {
        for tool in product.tools {
            let names: Vec<&str> = if groups.is_empty() {
                vec![product.name]
            } else {
                groups
                    .iter()
                    .filter(|g| g.tools.contains(&tool.name))
                    .map(|g| g.name)
                    .collect()
            };
            for name in names {
                skills
                    .entry(name.to_owned())
                    .or_default()
                    .extend(tool.permissions.iter().map(|p| (*p).to_owned()));
            }
        }
    }
    for group in groups {
        skills.entry(group.name.to_owned()).or_default();
    }
    skills
}

/// The scope catalogue as the authorization decision reads it.
fn scope_table(setup: &OAuthSetup) -> ScopeTable {
    ScopeTable {
        scopes: setup
            .scopes
            .iter()
            .map(|s| ScopeRule {
                id: s.id.clone(),
                read_only: s.read_only,
                permissions: s.permissions.clone(),
            })
            .collect(),
    }
}

/// The events the metrics count (`toolforge_auth_events_total`; a
/// rejection is counted where the 401 is answered).
fn count(event: AuthEvent) {
    use crate::metrics::{AuthEvent as Counted, auth_event};
    match event {
        AuthEvent::Issued => auth_event(Counted::Issued),
        AuthEvent::Refreshed => auth_event(Counted::Refreshed),
        AuthEvent::Revoked => auth_event(Counted::Revoked),
        AuthEvent::Authorized
        | AuthEvent::UpstreamRefreshed
        | AuthEvent::Rejected
        | AuthEvent::StepUpRefused => {}
    }
}

/// Copies the connection's peer address to the extension the
/// authorization server reads.
async fn client_addr(mut req: Request) -> Request {
    if let Some(peer) = req.extensions().get::<PeerAddr>().copied() {
        req.extensions_mut().insert(ClientAddr(peer.0.ip()));
    }
    req
}

/// `/readyz`: the grant store answers a round trip.
#[derive(Debug)]
pub struct StoreReadiness(pub Arc<dyn GrantStore>);

impl ReadinessCheck for StoreReadiness {
    fn name(&self) -> &str {
        "grant_store"
    }

    fn check(&self) -> ReadinessFuture<'_> {
        Box::pin(async move {
            self.0.ping().await.map_err(|e| {
                // The answer is public: the database's message stays in the log.
                tracing::warn!(error = %e, "grant store readiness check failed");
                format!("the {} grant store does not answer", self.0.backend())
            })
        })
    }
}
