//! The generated MCP server binary (`cloudflare-mcp`, package
//! `cloudflare-tools`) run as a child process for the length of a test:
//! stderr captured into a buffer for log assertions, the HTTP port read from
//! its `listening on http://IP:PORT/mcp` line, and the child killed by its
//! id when the guard drops.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Environment variable naming a prebuilt server binary (skips the build).
pub const BIN_ENV: &str = "TOOLFORGE_MCP_BIN";
/// Environment variable the stdio server reads its upstream token from.
pub const TOKEN_ENV: &str = "CLOUDFLARE_API_TOKEN";
/// How long the server may take to print its listening line.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Stderr kept (its tail).
const MAX_LOG: usize = 16 * 1024 * 1024;

/// The server binary, built once per test process with
/// `cargo build -p cloudflare-tools --bin cloudflare-mcp` (a no-op when it is
/// up to date), or taken from `TOOLFORGE_MCP_BIN`.
///
/// # Errors
///
/// The build fails, or the binary is missing afterwards.
pub fn binary() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> Result<PathBuf, String> {
    if let Ok(path) = std::env::var(BIN_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{BIN_ENV}={} is not a file", path.display()))
        };
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .ok_or("the tests crate has no parent directory")?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "cloudflare-tools",
            "--bin",
            "cloudflare-mcp",
        ])
        .current_dir(&workspace)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{cargo} build -p cloudflare-tools`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo build -p cloudflare-tools --bin cloudflare-mcp` failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let path = target.join("debug").join("cloudflare-mcp");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "built cloudflare-tools but {} does not exist",
            path.display()
        ))
    }
}

/// Shared, bounded capture of a child's stderr.
#[derive(Debug, Clone, Default)]
pub struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    fn push(&self, bytes: &[u8]) {
        if let Ok(mut log) = self.0.lock() {
            log.extend_from_slice(bytes);
            if log.len() > MAX_LOG {
                let cut = log.len() - MAX_LOG / 2;
                log.drain(..cut);
            }
        }
    }

    /// Everything captured so far (lossy UTF-8).
    pub fn text(&self) -> String {
        let bytes = self.0.lock().map(|l| l.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates a fresh, uniquely named directory.
    ///
    /// # Errors
    ///
    /// It cannot be created.
    pub fn new() -> Result<ScratchDir, String> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let path = std::env::temp_dir().join(format!(
            "toolforge-e2e-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
        Ok(ScratchDir(path))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How to start the server.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    /// Arguments after `--transport …` (and `--listen` for HTTP).
    pub args: Vec<String>,
    /// Environment variables set for the child (on top of a cleaned
    /// environment: inherited `CLOUDFLARE_API_TOKEN` and `RUST_LOG` removed).
    pub env: Vec<(String, String)>,
    /// Client token → upstream token pairs written to a tokens file passed
    /// as `--tokens-file` (HTTP).
    pub tokens: Vec<(String, String)>,
}

impl ServerConfig {
    /// A configuration with these arguments.
    pub fn new<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Adds a client token mapped to an upstream token (`--tokens-file`).
    pub fn token(mut self, client: &str, upstream: &str) -> Self {
        self.tokens.push((client.to_owned(), upstream.to_owned()));
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds arguments.
    pub fn arg<S: Into<String>>(mut self, arg: S) -> Self {
        self.args.push(arg.into());
        self
    }
}

/// A running server; killed (by its process id) on drop.
#[derive(Debug)]
pub struct Server {
    child: Child,
    addr: Option<SocketAddr>,
    log: LogBuffer,
    stdin: Option<ChildStdin>,
    stdout_lines: Option<Receiver<String>>,
    _scratch: Option<ScratchDir>,
}

fn command(
    transport: &str,
    config: &ServerConfig,
) -> Result<(Command, Option<ScratchDir>), String> {
    let mut cmd = Command::new(binary()?);
    cmd.arg("--transport").arg(transport);
    if transport == "http" {
        cmd.args(["--listen", "127.0.0.1:0"]);
    }
    let scratch = if config.tokens.is_empty() {
        None
    } else {
        let dir = ScratchDir::new()?;
        let file = dir.path().join("tokens.json");
        let pairs: Vec<(&str, &str)> = config
            .tokens
            .iter()
            .map(|(c, u)| (c.as_str(), u.as_str()))
            .collect();
        write_tokens_file(&file, &pairs)?;
        cmd.arg("--tokens-file").arg(&file);
        Some(dir)
    };
    cmd.args(&config.args)
        .env_remove(TOKEN_ENV)
        .env_remove("RUST_LOG")
        .envs(config.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok((cmd, scratch))
}

impl Server {
    /// Starts `cloudflare-mcp --transport http --listen 127.0.0.1:0 ARGS` and
    /// waits (bounded) for its `listening on http://IP:PORT/mcp` line.
    ///
    /// # Errors
    ///
    /// The binary cannot be built or spawned, exits first, or prints no
    /// listening line in time (the captured stderr is in the message).
    pub fn http(config: &ServerConfig) -> Result<Server, String> {
        let (mut cmd, scratch) = command("http", config)?;
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let log = LogBuffer::default();
        let (tx, rx) = mpsc::channel::<String>();
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stderr);
                let mut line = Vec::new();
                while let Ok(n) = reader.read_until(b'\n', &mut line) {
                    if n == 0 {
                        break;
                    }
                    log.push(&line);
                    let _ = tx.send(String::from_utf8_lossy(&line).into_owned());
                    line.clear();
                }
            });
        }
        // Stdout is not part of the HTTP contract; drain it so the child never blocks.
        if let Some(mut stdout) = child.stdout.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = stdout.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    log.push(b"[stdout] ");
                    log.push(&buf[..n]);
                }
            });
        }
        let mut server = Server {
            child,
            addr: None,
            log,
            stdin: None,
            stdout_lines: None,
            _scratch: scratch,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    if let Some(addr) = parse_listening(&line) {
                        server.addr = Some(addr);
                        return Ok(server);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    let status = server.child.wait().map(|s| s.to_string());
                    return Err(format!(
                        "the server closed stderr before listening (exit: {status:?}); stderr:\n{}",
                        server.log.text()
                    ));
                }
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                // Give the reader a moment to drain what is left.
                while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
                    let _ = line;
                }
                return Err(format!(
                    "the server exited with {status} before listening; stderr:\n{}",
                    server.log.text()
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "no `listening on http://…/mcp` line within {READY_TIMEOUT:?}; stderr:\n{}",
                    server.log.text()
                ));
            }
        }
    }

    /// Starts `cloudflare-mcp --transport stdio ARGS` with piped stdin and
    /// stdout, for raw JSON-RPC lines ([`Server::send_line`],
    /// [`Server::read_message`]).
    ///
    /// # Errors
    ///
    /// The binary cannot be built or spawned.
    pub fn stdio(config: &ServerConfig) -> Result<Server, String> {
        let (mut cmd, scratch) = command("stdio", config)?;
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let log = LogBuffer::default();
        if let Some(mut stderr) = child.stderr.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = stderr.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    log.push(&buf[..n]);
                }
            });
        }
        let (tx, rx) = mpsc::channel::<String>();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                let reader = BufReader::new(stdout);
                for line in reader.lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let stdin = child.stdin.take();
        Ok(Server {
            child,
            addr: None,
            log,
            stdin,
            stdout_lines: Some(rx),
            _scratch: scratch,
        })
    }

    /// The HTTP address (HTTP servers only).
    ///
    /// # Panics
    ///
    /// On a stdio server.
    #[allow(clippy::panic)]
    pub fn addr(&self) -> SocketAddr {
        match self.addr {
            Some(addr) => addr,
            None => panic!("addr() on a stdio server"),
        }
    }

    /// `http://IP:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr())
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the server wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.text()
    }

    /// `None` while it runs, else how it ended.
    pub fn exit_status(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown ({e})")),
        }
    }

    /// Writes one line (a `\n` is added) to a stdio server.
    ///
    /// # Errors
    ///
    /// Not a stdio server, or the pipe is closed.
    pub fn send_line(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("no stdin (HTTP server?)")?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("writing to the server's stdin: {e}"))
    }

    /// Closes a stdio server's stdin (end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next stdout line of a stdio server, parsed as JSON, within `limit`.
    ///
    /// # Errors
    ///
    /// Nothing arrived in time, stdout closed, or the line is not JSON.
    pub fn read_message(&mut self, limit: Duration) -> Result<Value, String> {
        let rx = self
            .stdout_lines
            .as_ref()
            .ok_or("no stdout (HTTP server?)")?;
        let line = rx.recv_timeout(limit).map_err(|e| match e {
            RecvTimeoutError::Timeout => format!("no message within {limit:?}"),
            RecvTimeoutError::Disconnected => "the server closed stdout".to_owned(),
        })?;
        serde_json::from_str(&line).map_err(|e| format!("stdout line is not JSON ({e}): {line}"))
    }

    /// Waits (bounded) for the child to exit; `None` when it still runs.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.exit_status() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Kill exactly our child by its id, then reap it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in a `listening on http://IP:PORT/mcp` line.
pub fn parse_listening(line: &str) -> Option<SocketAddr> {
    let rest = line.split("listening on http://").nth(1)?;
    let authority = rest.split('/').next()?.trim();
    authority.parse().ok()
}

/// Writes a tokens file (`{"tokens":[{"sha256":…,"upstream_token":…}]}`)
/// mapping each client token to an upstream token.
///
/// # Errors
///
/// The file cannot be written.
pub fn write_tokens_file(path: &Path, pairs: &[(&str, &str)]) -> Result<(), String> {
    let tokens: Vec<Value> = pairs
        .iter()
        .map(|(client, upstream)| {
            serde_json::json!({
                "sha256": crate::sha256::hex_digest(client.as_bytes()),
                "upstream_token": upstream,
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({ "tokens": tokens }))
        .map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_lines() {
        assert_eq!(
            parse_listening("listening on http://127.0.0.1:40123/mcp\n"),
            Some("127.0.0.1:40123".parse().unwrap())
        );
        assert_eq!(
            parse_listening("2026-11-30T00:00:00Z INFO listening on http://[::1]:8080/mcp"),
            Some("[::1]:8080".parse().unwrap())
        );
        assert_eq!(parse_listening("starting"), None);
    }

    #[test]
    fn tokens_files_hold_digests_not_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        write_tokens_file(&path, &[("client-a", "up-a")]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["tokens"][0]["sha256"],
            crate::sha256::hex_digest(b"client-a")
        );
        assert_eq!(v["tokens"][0]["upstream_token"], "up-a");
        assert!(!text.contains("client-a"));
    }
}
