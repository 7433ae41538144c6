//! `loadtest scale --instances 2`: the same clients and failing upstream,
//! against two `--auth oauth` server processes behind a loopback
//! round-robin TCP proxy, sharing one PostgreSQL grant store and secret (a
//! real server from Debian's `postgresql`, as
//! `tests/tests/test_oauth_instances.rs` starts it) and one public URL, the
//! proxy's. The provider is the real `oidc-provider`
//! (`tests/js/oauth-upstream.mjs`); one user signs in once through the
//! proxy (registration and consent, the code exchanged on the other
//! instance), and every client presents that access token, so each call is
//! checked against the shared store by whichever instance its connection
//! landed on.

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use toolforge_tests::browser::{Browser, Consent, query_param};
use toolforge_tests::oauth::{
    self, LOGIN, OAuthOptions, OAuthServer, OAuthUpstream, PASSWORD, Pkce, UpstreamOptions,
};
use toolforge_tests::oauth_flow;
use toolforge_tests::postgres::Postgres;

use super::{Faults, Options, drive, report, rss_kb, upstream};

/// Starts forwarding each connection accepted on `listener` to the next of
/// `targets` in turn, byte for byte both ways (keep-alive connections stay
/// on their instance, as behind a layer-4 balancer). Returns how many
/// connections each target got so far.
fn balance(listener: TcpListener, targets: Vec<SocketAddr>) -> Arc<Vec<AtomicUsize>> {
    let counts: Arc<Vec<AtomicUsize>> =
        Arc::new(targets.iter().map(|_| AtomicUsize::new(0)).collect());
    let seen = Arc::clone(&counts);
    std::thread::spawn(move || {
        for (n, client) in listener.incoming().enumerate() {
            let Ok(client) = client else { continue };
            let i = n % targets.len();
            let Ok(server) = TcpStream::connect(targets[i]) else {
                let _ = client.shutdown(Shutdown::Both);
                continue;
            };
            seen[i].fetch_add(1, Ordering::Relaxed);
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            pipe(&client, &server);
            pipe(&server, &client);
        }
    });
    counts
}

/// Copies `from` into `to` on a thread of its own until `from` ends, then
/// ends `to`'s write side.
fn pipe(from: &TcpStream, to: &TcpStream) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(move || {
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
        });
}

/// Signs `LOGIN` in (registered on `a`, authorized through the proxy at
/// `public`, the code exchanged on `b`): the access token.
fn sign_in(a: &OAuthServer, b: &OAuthServer, public: &str) -> Result<String, String> {
    let redirect = "http://127.0.0.1:9/cb";
    let client_id = oauth_flow::register(a, redirect, "loadtest")?;
    let pkce = Pkce::new();
    let state = oauth::random_token(16);
    // The consent page is checked against the public origin.
    let authorize = oauth_flow::authorize_url(a, &client_id, redirect, &pkce, &state).replacen(
        &a.base_url,
        public,
        1,
    );
    let signed =
        Browser::new().sign_in(&authorize, redirect, &Consent::default(), LOGIN, PASSWORD)?;
    let code = query_param(&signed.final_url, "code").ok_or("no code after the sign-in")?;
    Ok(oauth_flow::exchange(b, &client_id, &code, redirect, &pkce.verifier)?.access)
}

/// Runs the two-instance scale test.
pub(super) fn run(o: &Options) -> Result<bool, String> {
    let pg = Postgres::start()?;
    let store = pg.create_database("grants")?;
    let provider = OAuthUpstream::start(&UpstreamOptions::default())?;
    let faults = Arc::new(Faults::default());
    let api = upstream(o, &faults).map_err(|e| format!("upstream: {e}"))?;
    let proxy = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("proxy: {e}"))?;
    let proxy_addr = proxy.local_addr().map_err(|e| format!("proxy: {e}"))?;
    let public = format!("http://{proxy_addr}");
    provider.add_redirect_uri(&format!("{public}/oauth/callback"))?;
    let mut extra_args: Vec<String> = [
        "--max-connections".to_owned(),
        (o.clients * 2 + 64).to_string(),
        // Every connection comes from the proxy on 127.0.0.1.
        "--max-connections-per-ip".to_owned(),
        (o.clients * 2 + 64).to_string(),
        "--upstream-timeout-secs".to_owned(),
        o.upstream_timeout.as_secs().to_string(),
    ]
    .into();
    extra_args.extend(o.server_args.iter().cloned());
    let options = OAuthOptions {
        store: Some(store),
        secret: Some(oauth::random_token(32)),
        public_url: Some(public.clone()),
        api_url: Some(format!("http://{api}")),
        extra_args,
        ..OAuthOptions::default()
    };
    let a = OAuthServer::start(&provider, &options).map_err(|e| format!("instance A: {e}"))?;
    let b = OAuthServer::start(&provider, &options).map_err(|e| format!("instance B: {e}"))?;
    let counts = balance(proxy, vec![a.server.addr(), b.server.addr()]);
    let token = sign_in(&a, &b, &public).map_err(|e| {
        format!(
            "sign-in: {e}\nA log:\n{}\nB log:\n{}",
            a.server.log(),
            b.server.log()
        )
    })?;
    let (tallies, wall) = drive(o, proxy_addr, &[token])?;
    println!(
        "two --auth oauth instances behind a round-robin proxy at {public}, one PostgreSQL grant store"
    );
    let answered = report(o, &tallies, &faults, wall);
    let mut within = true;
    for (name, server, count) in [("A", &a, &counts[0]), ("B", &b, &counts[1])] {
        let peak_mb = rss_kb(server.server.pid(), "VmHWM:") as f64 / 1024.0;
        within &= peak_mb <= o.rss_bound_mb as f64;
        println!(
            "  instance {name}: {} connections, peak RSS {peak_mb:.1} MB (bound {} MB)",
            count.load(Ordering::Relaxed),
            o.rss_bound_mb
        );
    }
    let pass = answered && within;
    println!("  {}", if pass { "PASS" } else { "FAIL" });
    drop((a, b, provider));
    drop(pg);
    Ok(pass)
}
