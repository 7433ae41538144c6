//! A Prism mock server (`@stoplight/prism-cli`, installed into
//! `tests/node_modules` by `npm ci --prefix tests`) run as a child process
//! for the length of a test, and killed when the guard drops.

use std::io::Read as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::http;

/// Environment variable that turns a missing Prism into a skip.
pub const SKIP_ENV: &str = "TOOLFORGE_SKIP_NODE";
/// How long Prism may take to start answering.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Ports tried before giving up (another process may grab the free port).
const PORT_ATTEMPTS: usize = 3;
/// Log kept from Prism's output (its tail).
const MAX_LOG: usize = 256 * 1024;

/// Why Prism could not be started.
#[derive(Debug)]
pub enum PrismError {
    /// `tests/node_modules/.bin/prism` does not exist.
    Missing(PathBuf),
    /// Spawning, port selection or readiness failed.
    Start(String),
}

impl std::fmt::Display for PrismError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrismError::Missing(path) => write!(
                f,
                "the Prism mock server is not installed ({} is missing): run `npm ci --prefix tests` \
                 from the repository root (CI installs it), or set {SKIP_ENV}=1 to skip tests that need Node tools",
                path.display()
            ),
            PrismError::Start(why) => write!(f, "Prism did not start: {why}"),
        }
    }
}

impl std::error::Error for PrismError {}

/// A running `prism mock` process; killed (by its process id) on drop.
#[derive(Debug)]
pub struct Prism {
    child: Child,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<u8>>>,
}

/// Path of the Prism CLI installed by `npm ci --prefix tests`.
pub fn binary() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin/prism")
}

/// Whether tests that need Node tools should be skipped (`TOOLFORGE_SKIP_NODE=1`).
pub fn skip_node() -> bool {
    std::env::var(SKIP_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

impl Prism {
    /// Starts Prism on `spec` unless it is not installed and
    /// `TOOLFORGE_SKIP_NODE=1` is set: then a loud SKIPPED line is printed
    /// and `Ok(None)` returned.
    ///
    /// # Errors
    ///
    /// [`PrismError::Missing`] (with the `npm ci` hint) when the binary is
    /// absent and skipping is not allowed, [`PrismError::Start`] when it
    /// does not come up.
    pub fn start_or_skip(spec: &Path, test: &str) -> Result<Option<Prism>, PrismError> {
        Prism::start_or_skip_at(&binary(), spec, test, skip_node())
    }

    /// [`Prism::start_or_skip`] with the binary path and the skip decision
    /// given explicitly.
    ///
    /// # Errors
    ///
    /// As [`Prism::start_or_skip`].
    pub fn start_or_skip_at(
        bin: &Path,
        spec: &Path,
        test: &str,
        skip: bool,
    ) -> Result<Option<Prism>, PrismError> {
        if !bin.exists() {
            if skip {
                eprintln!(
                    "\n*** SKIPPED {test}: Prism is not installed ({} missing) and {SKIP_ENV}=1 is set ***\n",
                    bin.display()
                );
                return Ok(None);
            }
            return Err(PrismError::Missing(bin.to_path_buf()));
        }
        Prism::start(bin, spec).map(Some)
    }

    /// Starts `bin mock -h 127.0.0.1 -p PORT --errors spec` on a free port
    /// and waits until it answers HTTP.
    ///
    /// # Errors
    ///
    /// The process cannot be spawned, exits early on every port tried, or
    /// does not answer within 60 seconds.
    pub fn start(bin: &Path, spec: &Path) -> Result<Prism, PrismError> {
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port().map_err(|e| PrismError::Start(format!("no free port: {e}")))?;
            match Prism::try_start(bin, spec, port) {
                Ok(prism) => return Ok(prism),
                Err(why) => last = why,
            }
        }
        Err(PrismError::Start(last))
    }

    fn try_start(bin: &Path, spec: &Path, port: u16) -> Result<Prism, String> {
        let mut child = Command::new(bin)
            .args([
                "mock",
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "--errors",
            ])
            .arg(spec)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        // Drain both pipes so Prism never blocks on a full pipe; the log is
        // shown when something goes wrong.
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let log = Arc::clone(&log);
            std::thread::spawn(move || drain(pipe, &log));
        }
        let mut prism = Prism {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log,
        };
        prism.wait_ready()?;
        Ok(prism)
    }

    /// Polls until an HTTP request gets any answer, the process exits, or
    /// the deadline passes.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let probe = http::Request {
            method: "GET".to_owned(),
            target: "/__toolforge_readiness_probe".to_owned(),
            ..http::Request::default()
        };
        let mut delay = Duration::from_millis(25);
        loop {
            if let Some(status) = self.exited() {
                return Err(format!(
                    "prism exited with {status} before answering; its output:\n{}",
                    self.log()
                ));
            }
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(500)).is_ok()
                && http::send(self.addr, &probe, Duration::from_secs(5)).is_ok()
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "no HTTP answer on {} within {READY_TIMEOUT:?}; its output:\n{}",
                    self.addr,
                    self.log()
                ));
            }
            // Back off (25 ms doubling up to 500 ms): polling, not a fixed sleep.
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_millis(500));
        }
    }

    fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("an unknown status ({e})")),
        }
    }

    /// The address Prism listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The process id of the Prism child.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What Prism printed so far (the tail, lossily decoded).
    pub fn log(&self) -> String {
        let log = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        String::from_utf8_lossy(&log).into_owned()
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        // Kill exactly our child by its id, then reap it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn drain(mut pipe: Box<dyn std::io::Read + Send>, log: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        if let Ok(mut log) = log.lock() {
            log.extend_from_slice(&buf[..n]);
            if log.len() > MAX_LOG {
                let cut = log.len() - MAX_LOG / 2;
                log.drain(..cut);
            }
        }
    }
}

/// A port that was free a moment ago (bind port 0, read it, release it).
fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_fails_with_the_install_hint_or_skips() {
        let bin = Path::new("/nonexistent/node_modules/.bin/prism");
        let spec = Path::new("spec.yaml");
        let err = Prism::start_or_skip_at(bin, spec, "t", false).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("npm ci --prefix tests") && text.contains(SKIP_ENV),
            "{text}"
        );
        assert!(
            Prism::start_or_skip_at(bin, spec, "t", true)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_process_that_exits_early_is_reported_with_its_output() {
        // `false` exits at once on every port tried: a start error, no hang.
        let err = Prism::start(Path::new("false"), Path::new("spec.yaml")).unwrap_err();
        assert!(err.to_string().contains("exited"), "{err}");
    }

    #[test]
    fn free_ports_are_loopback_ports() {
        assert_ne!(free_port().unwrap(), 0);
    }
}
