//! The OAuth end-to-end harness (`--auth oauth`, issue 11):
//!
//! - [`OAuthUpstream`]: `tests/js/oauth-upstream.mjs`, a real OAuth provider
//!   (`oidc-provider`) and an API mock that accepts only its tokens, as one
//!   Node child process stopped by its id on drop, with its admin endpoints
//!   (register our server as a client, read the API requests it saw, token
//!   endpoint counts, token expiry, revoke a user);
//! - [`OAuthServer`]: `cloudflare-mcp --auth oauth --oauth-config FILE` with
//!   a config written for that upstream, its callback registered there;
//! - [`Pkce`], [`random_token`], [`post_form`], [`get_json`]: the raw
//!   OAuth client pieces the tests use beside the SDK clients;
//! - [`crate::oauth_driver`]: the SDK client scripts' line protocol.
//!
//! Token values are never printed: the upstream records fingerprints, the
//! scripts report booleans and fingerprints, and URLs in messages lose their
//! query ([`crate::browser::clip_url`]).

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::browser::{Url, form_encode};
use crate::http::{self, Request, Response};
use crate::server::{Server, ServerConfig};

/// How long the upstream script may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Timeout of one admin or OAuth request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The environment variable holding the server's signing/encryption secret.
pub const SECRET_ENV: &str = "TOOLFORGE_OAUTH_SECRET";
/// The environment variable holding our upstream client secret.
pub const UPSTREAM_SECRET_ENV: &str = "UPSTREAM_CLIENT_SECRET";
/// Our server's client id at the upstream provider.
pub const UPSTREAM_CLIENT_ID: &str = "toolforge";
/// The upstream user the tests sign in as.
pub const LOGIN: &str = "alice";
/// That user's password at the test provider.
pub const PASSWORD: &str = "wonderland";

fn tests_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `n` random bytes from the OS.
///
/// # Panics
///
/// `/dev/urandom` cannot be read.
#[allow(clippy::expect_used)]
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .expect("reading /dev/urandom");
    buf
}

/// Base64 (`url`: the URL-safe alphabet), without padding.
pub fn base64(bytes: &[u8], url: bool) -> String {
    let table: &[u8; 64] = if url {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(table[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    if !url {
        while !out.len().is_multiple_of(4) {
            out.push('=');
        }
    }
    out
}

/// A random URL-safe string of `bytes` random bytes (≥ 32 for secrets).
pub fn random_token(bytes: usize) -> String {
    base64(&random_bytes(bytes), true)
}

/// A PKCE pair (S256).
#[derive(Debug, Clone)]
pub struct Pkce {
    /// The verifier (kept by the client).
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`.
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair.
    pub fn new() -> Pkce {
        let verifier = random_token(48);
        let challenge = base64(&crate::sha256::digest(verifier.as_bytes()), true);
        Pkce {
            verifier,
            challenge,
        }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Pkce::new()
    }
}

/// Sends `method url` with an optional body and headers.
///
/// # Errors
///
/// A bad URL or a transport failure.
pub fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Result<Response, String> {
    let parsed = Url::parse(url)?;
    let all: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let request = Request {
        method: method.to_owned(),
        target: parsed.target,
        headers: all,
        body,
    };
    http::send(parsed.addr, &request, REQUEST_TIMEOUT)
        .map_err(|e| format!("{method} {}: {e}", crate::browser::clip_url(url)))
}

/// POSTs a form, with HTTP Basic client authentication when `basic` is set.
///
/// # Errors
///
/// As [`send`].
pub fn post_form(
    url: &str,
    fields: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> Result<Response, String> {
    let owned: Vec<(String, String)> = fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let auth = basic.map(|(id, secret)| {
        format!(
            "Basic {}",
            base64(format!("{id}:{secret}").as_bytes(), false)
        )
    });
    let mut headers = vec![
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Accept", "application/json"),
    ];
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth.as_str()));
    }
    send(
        "POST",
        url,
        &headers,
        Some(form_encode(&owned).into_bytes()),
    )
}

/// GETs `url` and parses a JSON body (any status).
///
/// # Errors
///
/// As [`send`], or the body is not JSON.
pub fn get_json(url: &str) -> Result<(u16, Value), String> {
    let response = send("GET", url, &[("Accept", "application/json")], None)?;
    let value = serde_json::from_slice(&response.body).map_err(|e| {
        format!(
            "GET {url}: not JSON ({e}): {}",
            crate::mcp::clip(&response.text(), 500)
        )
    })?;
    Ok((response.status, value))
}

fn json_call(method: &str, url: &str, body: &Value) -> Result<Value, String> {
    let response = send(
        method,
        url,
        &[("Content-Type", "application/json")],
        Some(body.to_string().into_bytes()),
    )?;
    let value: Value = serde_json::from_slice(&response.body)
        .map_err(|e| format!("{method} {url}: not JSON ({e})"))?;
    if response.status != 200 {
        return Err(format!(
            "{method} {url} answered {}: {value}",
            response.status
        ));
    }
    Ok(value)
}

/// A capture of a child's output stream.
#[derive(Debug, Clone, Default)]
pub(crate) struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    pub(crate) fn spawn_reader(&self, mut pipe: impl std::io::Read + Send + 'static) {
        let sink = self.0.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut sink) = sink.lock() {
                    sink.extend_from_slice(&buf[..n]);
                    if sink.len() > 4 << 20 {
                        let cut = sink.len() - (2 << 20);
                        sink.drain(..cut);
                    }
                }
            }
        });
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().map(|b| b.clone()).unwrap_or_default()).into_owned()
    }
}

/// How to start the upstream.
#[derive(Debug, Clone)]
pub struct UpstreamOptions {
    /// Upstream access-token lifetime in seconds (short to exercise refresh).
    pub access_ttl_secs: u64,
    /// Rotate refresh tokens on use.
    pub rotate_refresh: bool,
    /// A scope the user unticks at the first consent (the provider grants
    /// fewer scopes than asked); later consents grant all.
    pub withhold_once: Option<&'static str>,
}

impl Default for UpstreamOptions {
    fn default() -> Self {
        UpstreamOptions {
            access_ttl_secs: 3600,
            rotate_refresh: true,
            withhold_once: None,
        }
    }
}

/// The upstream provider and API mock (`tests/js/oauth-upstream.mjs`),
/// stopped by its process id on drop.
#[derive(Debug)]
pub struct OAuthUpstream {
    child: Child,
    _stdin: Option<ChildStdin>,
    /// Its ready line: `issuer`, `authorize_url`, `token_url`, `revoke_url`,
    /// `introspection_url`, `api`, `admin`.
    pub info: Value,
    stderr: Capture,
    /// Our server's client secret there.
    pub client_secret: String,
    redirect_uris: Mutex<Vec<String>>,
}

impl OAuthUpstream {
    /// Starts the script and waits (bounded) for its ready line.
    ///
    /// # Errors
    ///
    /// Node cannot start it, it exits, or prints no ready line in time.
    pub fn start(options: &UpstreamOptions) -> Result<OAuthUpstream, String> {
        let mut command = Command::new("node");
        command
            .arg(tests_dir().join("js/oauth-upstream.mjs"))
            .args([
                "--access-ttl",
                &options.access_ttl_secs.to_string(),
                "--password",
                PASSWORD,
            ])
            .current_dir(tests_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if options.rotate_refresh {
            command.arg("--rotate-refresh");
        }
        if let Some(scope) = options.withhold_once {
            command.args(["--withhold-once", scope]);
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start node js/oauth-upstream.mjs: {e}"))?;
        let stderr = Capture::default();
        if let Some(pipe) = child.stderr.take() {
            stderr.spawn_reader(pipe);
        }
        let (tx, rx) = mpsc::channel::<String>();
        if let Some(pipe) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let stdin = child.stdin.take();
        let mut upstream = OAuthUpstream {
            child,
            _stdin: stdin,
            info: Value::Null,
            stderr,
            client_secret: random_token(32),
            redirect_uris: Mutex::new(Vec::new()),
        };
        let line = rx.recv_timeout(READY_TIMEOUT).map_err(|e| {
            format!(
                "oauth-upstream.mjs printed no ready line ({e}); exit: {:?}; stderr:\n{}",
                upstream.child.try_wait(),
                upstream.log()
            )
        })?;
        upstream.info = serde_json::from_str(&line)
            .map_err(|e| format!("ready line is not JSON ({e}): {line}"))?;
        Ok(upstream)
    }

    /// A string field of the ready line (`issuer`, `api`, `admin`, …).
    pub fn url(&self, field: &str) -> String {
        self.info[field].as_str().unwrap_or_default().to_owned()
    }

    /// What it wrote to stderr.
    pub fn log(&self) -> String {
        self.stderr.text()
    }

    /// Registers (or updates) our server as a client with one more redirect
    /// URI (the callbacks of every server started so far stay registered).
    ///
    /// # Errors
    ///
    /// The admin call fails.
    pub fn add_redirect_uri(&self, uri: &str) -> Result<(), String> {
        let uris = {
            let mut uris = self.redirect_uris.lock().map_err(|e| e.to_string())?;
            uris.push(uri.to_owned());
            uris.clone()
        };
        let stored = json_call(
            "POST",
            &format!("{}/client", self.url("admin")),
            &json!({"client_id": UPSTREAM_CLIENT_ID, "client_secret": self.client_secret, "redirect_uris": uris}),
        )?;
        if stored["redirect_uris"] != json!(uris) {
            return Err(format!("the provider stored other redirect URIs: {stored}"));
        }
        Ok(())
    }

    /// The API requests the mock saw: `{method, path, query, status, auth?,
    /// token: {client_id, sub, scope, fp, grant} | null}`.
    ///
    /// # Errors
    ///
    /// The admin call fails.
    pub fn requests(&self) -> Result<Vec<Value>, String> {
        let (_, value) = get_json(&format!("{}/requests", self.url("admin")))?;
        Ok(value["requests"].as_array().cloned().unwrap_or_default())
    }

    /// Token endpoint counts: `{authorization_code, refresh_token,
    /// revocations, grant_revoked, errors: [...]}`.
    ///
    /// # Errors
    ///
    /// The admin call fails.
    pub fn events(&self) -> Result<Value, String> {
        get_json(&format!("{}/events", self.url("admin"))).map(|(_, v)| v)
    }

    /// Waits (polling, bounded by `limit`) until the upstream access token
    /// with fingerprint `fp` has expired.
    ///
    /// # Errors
    ///
    /// Unknown token, or still valid at the limit.
    pub fn wait_token_expired(&self, fp: &str, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            let (_, status) = get_json(&format!("{}/token?fp={fp}", self.url("admin")))?;
            if status["known"] != true {
                return Err(format!(
                    "the provider issued no access token with fingerprint {fp}"
                ));
            }
            if status["expired"] == true {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "upstream token {fp} still valid after {limit:?}: {status}"
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Revokes every upstream grant and token of user `sub`.
    ///
    /// # Errors
    ///
    /// The admin call fails.
    pub fn revoke_user(&self, sub: &str) -> Result<u64, String> {
        let value = json_call(
            "POST",
            &format!("{}/revoke", self.url("admin")),
            &json!({"sub": sub}),
        )?;
        Ok(value["revoked_grants"].as_u64().unwrap_or_default())
    }
}

impl Drop for OAuthUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How to configure an OAuth server.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// The grant store URL; `None`: a SQLite file in the server's scratch dir.
    pub store: Option<String>,
    /// The shared secret (base64url of ≥ 32 bytes); `None`: a fresh one.
    pub secret: Option<String>,
    /// Dynamic client registration at `/register`.
    pub dynamic_registration: bool,
    /// Upstream scopes always requested (the server adds the catalogue's
    /// `api:read` / `api:write` for the exposure chosen on the consent page).
    pub upstream_scopes: Vec<String>,
    /// Downstream access-token lifetime.
    pub access_token_secs: u64,
    /// Downstream refresh-token lifetime.
    pub refresh_token_secs: u64,
    /// Authorization-code lifetime.
    pub code_secs: u64,
    /// The public URL; `None`: `http://127.0.0.1:{port}` (its own address).
    /// Instances behind one "load balancer" share one.
    pub public_url: Option<String>,
    /// More server arguments.
    pub extra_args: Vec<String>,
    /// The API the server calls (`--upstream`); `None`: the provider's own
    /// API mock.
    pub api_url: Option<String>,
    /// The scope catalogue; `None`: `api:read` / `api:write` mapping no
    /// permissions.
    pub scope_catalogue: Option<Value>,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            store: None,
            secret: None,
            dynamic_registration: true,
            upstream_scopes: ["openid", "offline_access"].map(String::from).to_vec(),
            access_token_secs: 3600,
            refresh_token_secs: 2_592_000,
            code_secs: 60,
            public_url: None,
            extra_args: Vec::new(),
            api_url: None,
            scope_catalogue: None,
        }
    }
}

/// The server's OAuth config (JSON) for `upstream`.
pub fn config_json(upstream: &OAuthUpstream, options: &OAuthOptions, store: &str) -> Value {
    json!({
        "public_url": options.public_url.as_deref().unwrap_or("http://127.0.0.1:{port}"),
        "secret_env": SECRET_ENV,
        "store": store,
        "dynamic_registration": options.dynamic_registration,
        "upstream": {
            "name": "Test Provider",
            "authorize_url": upstream.url("authorize_url"),
            "token_url": upstream.url("token_url"),
            "revoke_url": upstream.url("revoke_url"),
            "client_id": UPSTREAM_CLIENT_ID,
            "client_secret_env": UPSTREAM_SECRET_ENV,
            "scopes": options.upstream_scopes,
            "token_auth": "client_secret_basic",
            // OpenID Connect providers (oidc-provider among them) drop
            // `offline_access`, so issue no refresh token, unless the
            // authorization request has prompt=consent (OIDC Core §11).
            "extra_authorize_params": {"prompt": "consent"},
        },
        "scope_catalogue": options.scope_catalogue.clone().unwrap_or_else(|| json!([
            {"id": "api:read", "description": "Read", "read_only": true, "permissions": []},
            {"id": "api:write", "description": "Write", "read_only": false, "permissions": []},
        ])),
        "lifetimes": {
            "access_token_secs": options.access_token_secs,
            "refresh_token_secs": options.refresh_token_secs,
            "code_secs": options.code_secs,
        },
        "cimd": {"allow_private_addresses": false, "allow_http": false},
    })
}

/// A running `--auth oauth` server and its files.
#[derive(Debug)]
pub struct OAuthServer {
    /// The process (killed on drop).
    pub server: Server,
    /// Its public URL (`iss`, the resource's origin): its own address
    /// unless [`OAuthOptions::public_url`] named another.
    pub public_url: String,
    /// Its own address, `http://127.0.0.1:PORT` (where requests go).
    pub base_url: String,
    /// The config file written.
    pub config_path: PathBuf,
    /// The store URL in use.
    pub store: String,
    /// The shared secret in use.
    pub secret: String,
    dir: crate::server::ScratchDir,
}

impl OAuthServer {
    /// Writes the config, starts `cloudflare-mcp --transport http --auth
    /// oauth --oauth-config FILE --upstream API --allow-loopback-upstream`
    /// and registers its callback with the upstream.
    ///
    /// # Errors
    ///
    /// The server does not start, or the registration fails.
    pub fn start(upstream: &OAuthUpstream, options: &OAuthOptions) -> Result<OAuthServer, String> {
        let dir = crate::server::ScratchDir::new()?;
        let store = options
            .store
            .clone()
            .unwrap_or_else(|| format!("sqlite:{}", dir.path().join("grants.db").display()));
        let secret = options.secret.clone().unwrap_or_else(|| random_token(32));
        let config_path = dir.path().join("oauth.json");
        let text = serde_json::to_string_pretty(&config_json(upstream, options, &store))
            .map_err(|e| e.to_string())?;
        std::fs::write(&config_path, text)
            .map_err(|e| format!("writing {}: {e}", config_path.display()))?;
        let mut config = ServerConfig::new(["--auth", "oauth", "--oauth-config"])
            .arg(config_path.display().to_string())
            .arg("--upstream")
            .arg(
                options
                    .api_url
                    .clone()
                    .unwrap_or_else(|| upstream.url("api")),
            )
            .arg("--allow-loopback-upstream")
            .env(SECRET_ENV, &secret)
            .env(UPSTREAM_SECRET_ENV, &upstream.client_secret);
        for arg in &options.extra_args {
            config = config.arg(arg.clone());
        }
        let server = Server::http(&config)?;
        let base_url = format!("http://{}", server.addr());
        let public_url = options
            .public_url
            .clone()
            .unwrap_or_else(|| base_url.clone());
        if options.public_url.is_none() {
            upstream.add_redirect_uri(&format!("{public_url}/oauth/callback"))?;
        }
        Ok(OAuthServer {
            server,
            public_url,
            base_url,
            config_path,
            store,
            secret,
            dir,
        })
    }

    /// `<public_url>/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.public_url)
    }

    /// The scratch directory (config, SQLite store).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_both_alphabets() {
        assert_eq!(
            base64(b"toolforge:s3cr?t>", false),
            "dG9vbGZvcmdlOnMzY3I/dD4="
        );
        assert_eq!(
            base64(b"toolforge:s3cr?t>", true),
            "dG9vbGZvcmdlOnMzY3I_dD4"
        );
        assert_eq!(base64(b"", false), "");
        assert_eq!(base64(b"ab", false), "YWI=");
    }

    #[test]
    fn pkce_is_s256_of_the_verifier() {
        // RFC 7636, appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(
            base64(&crate::sha256::digest(verifier.as_bytes()), true),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let pair = Pkce::new();
        assert!(pair.verifier.len() >= 43, "{}", pair.verifier.len());
        assert_ne!(pair.verifier, Pkce::new().verifier);
    }
}
