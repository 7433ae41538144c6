//! Benchmark of `--auth oauth` (not a test; never run by `tests/run.sh`):
//!
//! 1. **Validation**: `OAuthServer::authenticate` per request (keyed hash,
//!    store lookup, expiry / audience / revocation checks, grant-key unwrap,
//!    upstream-token decryption), in process, on SQLite and on PostgreSQL
//!    (a throwaway server this binary starts), each with the per-instance
//!    token cache (`token_cache_secs`, default 5 s: the bound within which
//!    a revocation on *another* instance takes effect) and without it.
//! 2. **tools/call overhead**: the real server binary with `--auth tokens`
//!    and with `--auth oauth` (SQLite) in front of the same loopback
//!    upstream, sequential keep-alive `tools/call`s interleaved in rounds;
//!    p50 of each and the ratio.
//!
//! `cargo run --release -p toolforge-tests --bin oauth_bench [-- --iterations N --calls N --rounds N]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolforge_runtime::oauth::config::OAuthConfig;
use toolforge_runtime::oauth::crypto::{self, ServerKeys};
use toolforge_runtime::oauth::model::{AuthCode, Exposure, Grant, TokenKind, TokenRecord};
use toolforge_runtime::oauth::store::{self, GrantStore};
use toolforge_runtime::oauth::upstream::{UpstreamClient, UpstreamTokens};
use toolforge_runtime::oauth::{NoScopedUrls, OAuthServer, OAuthSetup};
use toolforge_tests::http::{self, KeepAlive};
use toolforge_tests::mcp::{HANDSHAKE_VERSION, message};
use toolforge_tests::postgres::Postgres;
use toolforge_tests::server::{ScratchDir, Server, ServerConfig};
use toolforge_tests::upstream::{Reply, Upstream};

const SECRET: &str = "YmVuY2gtc2VjcmV0LWJlbmNoLXNlY3JldC1iZW5jaC1zZWNyZXQtYmVuY2g";
const CLIENT_TOKEN: &str = "bench-client-token-7c1d";
const UPSTREAM_TOKEN: &str = "bench-upstream-token-2e9f";
const ZONE: &str = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a";

struct Options {
    iterations: usize,
    calls: usize,
    rounds: usize,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        iterations: 20_000,
        calls: 500,
        rounds: 5,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n: usize = value.parse().map_err(|_| format!("{flag}: not a number"))?;
        match flag.as_str() {
            "--iterations" => o.iterations = n,
            "--calls" => o.calls = n,
            "--rounds" => o.rounds = n,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(o)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn config(dir: &std::path::Path, store_url: &str, cache_secs: u64) -> Result<OAuthConfig, String> {
    let path = dir.join(format!("oauth-{cache_secs}-{}.json", store_url.len()));
    let text = json!({
        "public_url": "http://127.0.0.1:{port}",
        "store": store_url,
        "token_cache_secs": cache_secs,
        "upstream": {"name": "Bench", "authorize_url": "http://127.0.0.1:9/authorize",
                     "token_url": "http://127.0.0.1:9/token", "client_id": "bench",
                     "client_secret_env": "BENCH_UPSTREAM_SECRET"}
    });
    std::fs::write(&path, text.to_string()).map_err(|e| e.to_string())?;
    OAuthConfig::load(&path).map_err(|e| e.to_string())
}

/// Writes a grant straight into the store, as a completed sign-in would,
/// and returns its access token.
async fn mint(
    store: &dyn GrantStore,
    keys: &ServerKeys,
    resource: &str,
    upstream_token: &str,
) -> Result<String, String> {
    let now = now();
    let grant_id = format!("g{}", &keys.new_token("").map_err(|e| e.to_string())?[..32]);
    let grant_key = keys.random_key().map_err(|e| e.to_string())?;
    let tokens = UpstreamTokens {
        access_token: upstream_token.to_owned(),
        refresh_token: None,
        expires_at: Some(now + 86_400),
        scope: None,
    };
    let plain = serde_json::to_vec(&tokens).map_err(|e| e.to_string())?;
    let sealed =
        crypto::seal(&grant_key, &plain, grant_id.as_bytes()).map_err(|e| e.to_string())?;
    let code = keys.new_token("tfc_").map_err(|e| e.to_string())?;
    let grant = Grant {
        id: grant_id.clone(),
        client_id: "https://client.example/bench.json".into(),
        resource: resource.to_owned(),
        scopes: vec![],
        exposure: Exposure::default(),
        created_at: now,
        expires_at: now + 86_400,
        upstream_sealed: sealed,
        upstream_expires_at: tokens.expires_at,
        version: 0,
        refresh_current: None,
        refresh_previous: None,
        step_up: None,
        revoked: false,
    };
    let wrapped =
        |t: &str| crypto::wrap_grant_key(t, &grant_id, &grant_key).map_err(|e| e.to_string());
    let auth_code = AuthCode {
        hash: keys.hash(&code),
        grant_id: grant_id.clone(),
        client_id: grant.client_id.clone(),
        redirect_uri: "http://127.0.0.1:9/cb".into(),
        code_challenge: crypto::s256_challenge("bench"),
        expires_at: now + 60,
        wrapped_key: wrapped(&code)?,
    };
    store
        .create_grant(&grant, &auth_code)
        .await
        .map_err(|e| e.to_string())?;
    let access = keys.new_token("tfa_").map_err(|e| e.to_string())?;
    let refresh = keys.new_token("tfr_").map_err(|e| e.to_string())?;
    let record = |t: &str, kind| -> Result<TokenRecord, String> {
        Ok(TokenRecord {
            hash: keys.hash(t),
            kind,
            grant_id: grant_id.clone(),
            expires_at: now + 86_400,
            wrapped_key: wrapped(t)?,
        })
    };
    store
        .issue_tokens(
            &record(&access, TokenKind::Access)?,
            &record(&refresh, TokenKind::Refresh)?,
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(access)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}

async fn validation(
    dir: &std::path::Path,
    label: &str,
    store_url: &str,
    o: &Options,
) -> Result<(), String> {
    for cache in [5u64, 0] {
        let config = config(dir, store_url, cache)?;
        let store = store::open(store_url).await.map_err(|e| e.to_string())?;
        let upstream = UpstreamClient::new(config.upstream.clone(), "secret".into())
            .map_err(|e| e.to_string())?;
        let setup = Arc::new(OAuthSetup {
            config,
            keys: ServerKeys::from_secret(SECRET).map_err(|e| e.to_string())?,
            store: store.clone(),
            upstream,
            scopes: vec![],
            products: Default::default(),
        });
        let server = OAuthServer::new(setup.clone(), 1, Arc::new(NoScopedUrls));
        let token = mint(
            store.as_ref(),
            &setup.keys,
            server.resource(),
            UPSTREAM_TOKEN,
        )
        .await?;
        for _ in 0..200 {
            server
                .authenticate(&token)
                .await
                .map_err(|e| format!("{e:?}"))?;
        }
        let mut times = Vec::with_capacity(o.iterations);
        for _ in 0..o.iterations {
            let start = Instant::now();
            let session = server
                .authenticate(&token)
                .await
                .map_err(|e| format!("{e:?}"))?;
            times.push(start.elapsed());
            if session.upstream_token != UPSTREAM_TOKEN {
                return Err("wrong upstream token".into());
            }
        }
        times.sort();
        println!(
            "validate+decrypt {label:<10} cache {:<4} p50 {:>8.1} µs  p99 {:>8.1} µs  ({} requests)",
            if cache > 0 {
                format!("{cache}s")
            } else {
                "off".into()
            },
            quantile(&times, 0.5).as_secs_f64() * 1e6,
            quantile(&times, 0.99).as_secs_f64() * 1e6,
            o.iterations
        );
    }
    Ok(())
}

fn call(addr: std::net::SocketAddr, token: &str, id: usize) -> http::Request {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "zones_get", "arguments": {"zone_id": ZONE}}});
    let _ = addr;
    http::Request {
        method: "POST".into(),
        target: "/mcp".into(),
        headers: vec![
            (
                "Accept".into(),
                "application/json, text/event-stream".into(),
            ),
            ("Content-Type".into(), "application/json".into()),
            ("MCP-Protocol-Version".into(), HANDSHAKE_VERSION.into()),
            ("Authorization".into(), format!("Bearer {token}")),
        ],
        body: Some(body.to_string().into_bytes()),
    }
}

fn run_calls(server: &Server, token: &str, n: usize) -> Result<Vec<Duration>, String> {
    let mut conn =
        KeepAlive::connect(server.addr(), Duration::from_secs(10)).map_err(|e| e.to_string())?;
    let mut times = Vec::with_capacity(n);
    for i in 0..n + 20 {
        let request = call(server.addr(), token, i);
        let start = Instant::now();
        let response = conn.send(&request).map_err(|e| e.to_string())?;
        let took = start.elapsed();
        let ok = response.status == 200
            && message(&response)
                .is_ok_and(|m| m["result"].is_object() && m["result"]["isError"] != true);
        if !ok {
            return Err(format!(
                "call failed: HTTP {} {}",
                response.status,
                response.text()
            ));
        }
        if i >= 20 {
            times.push(took);
        }
    }
    Ok(times)
}

async fn overhead(o: &Options) -> Result<(), String> {
    let upstream = Upstream::start(|_| Reply::envelope(json!({"id": ZONE, "name": "example.com"})))
        .map_err(|e| e.to_string())?;
    let base = format!("{}/client/v4", upstream.url());
    let common = ["--upstream", &base, "--allow-loopback-upstream"];
    let tokens = Server::http(&ServerConfig::new(common).token(CLIENT_TOKEN, UPSTREAM_TOKEN))?;
    let scratch = ScratchDir::new()?;
    let store_url = format!("sqlite:{}", scratch.path().join("grants.db").display());
    let cfg_path = scratch.path().join("oauth.json");
    std::fs::write(
        &cfg_path,
        json!({"public_url": "http://127.0.0.1:{port}", "store": store_url,
               "upstream": {"name": "Bench", "authorize_url": "http://127.0.0.1:9/a", "token_url": "http://127.0.0.1:9/t",
                            "client_id": "bench", "client_secret_env": "BENCH_UPSTREAM_SECRET"}})
        .to_string(),
    )
    .map_err(|e| e.to_string())?;
    let oauth = Server::http(
        &ServerConfig::new(common)
            .arg("--auth")
            .arg("oauth")
            .arg("--oauth-config")
            .arg(cfg_path.display().to_string())
            .env("TOOLFORGE_OAUTH_SECRET", SECRET)
            .env("BENCH_UPSTREAM_SECRET", "x"),
    )?;
    let store = store::open(&store_url).await.map_err(|e| e.to_string())?;
    let keys = ServerKeys::from_secret(SECRET).map_err(|e| e.to_string())?;
    let resource = format!("http://127.0.0.1:{}/mcp", oauth.addr().port());
    let access = mint(store.as_ref(), &keys, &resource, UPSTREAM_TOKEN).await?;
    let (mut t_all, mut o_all) = (Vec::new(), Vec::new());
    for round in 0..o.rounds {
        let t = run_calls(&tokens, CLIENT_TOKEN, o.calls)?;
        let a = run_calls(&oauth, &access, o.calls)?;
        let (mut ts, mut os) = (t.clone(), a.clone());
        ts.sort();
        os.sort();
        println!(
            "round {}: tools/call p50 tokens {:.1} µs, oauth {:.1} µs",
            round + 1,
            quantile(&ts, 0.5).as_secs_f64() * 1e6,
            quantile(&os, 0.5).as_secs_f64() * 1e6
        );
        t_all.extend(t);
        o_all.extend(a);
    }
    t_all.sort();
    o_all.sort();
    let (tp, op) = (quantile(&t_all, 0.5), quantile(&o_all, 0.5));
    println!(
        "tools/call over HTTP ({} calls each): p50 --auth tokens {:.1} µs, --auth oauth {:.1} µs, ratio {:.2}",
        t_all.len(),
        tp.as_secs_f64() * 1e6,
        op.as_secs_f64() * 1e6,
        op.as_secs_f64() / tp.as_secs_f64().max(1e-9)
    );
    Ok(())
}

async fn run() -> Result<(), String> {
    let o = parse()?;
    let scratch = ScratchDir::new()?;
    let sqlite = format!("sqlite:{}", scratch.path().join("bench.db").display());
    validation(scratch.path(), "sqlite", &sqlite, &o).await?;
    let pg = Postgres::start()?;
    let url = pg.create_database("bench")?;
    validation(scratch.path(), "postgres", &url, &o).await?;
    overhead(&o).await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("oauth_bench: {e}");
        std::process::exit(1);
    }
}
