//! Client scripts run with a line protocol (JSON lines on stdin/stdout),
//! for the SDK clients of the OAuth tests (`tests/js/oauth-client.mjs`,
//! `tests/py/oauth_client.py`): the script hands the authorization URL to
//! the test, which signs in with a browser and answers with the final
//! redirect ([`drive_client`]).

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::oauth::Capture;

/// A client script run with a line protocol: JSON lines both ways; its
/// process group is killed on drop.
#[derive(Debug)]
pub struct Interactive {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stdout: Arc<Mutex<String>>,
    stderr: Capture,
    reaped: bool,
}

impl Interactive {
    /// Spawns `command` in a process group of its own.
    ///
    /// # Errors
    ///
    /// It cannot be spawned.
    pub fn spawn(mut command: Command) -> Result<Interactive, String> {
        let program = format!("{:?}", command.get_program());
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        let stderr = Capture::default();
        if let Some(pipe) = child.stderr.take() {
            stderr.spawn_reader(pipe);
        }
        let stdout = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        if let Some(pipe) = child.stdout.take() {
            let all = stdout.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if let Ok(mut all) = all.lock() {
                        all.push_str(&line);
                        all.push('\n');
                    }
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let stdin = child.stdin.take();
        Ok(Interactive {
            child,
            stdin,
            lines: rx,
            stdout,
            stderr,
            reaped: false,
        })
    }

    /// Writes one JSON line.
    ///
    /// # Errors
    ///
    /// The pipe is closed.
    pub fn send(&mut self, value: &Value) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        writeln!(stdin, "{value}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("writing to the client: {e}"))
    }

    /// The next stdout line that is a JSON object, before `deadline`.
    ///
    /// # Errors
    ///
    /// Nothing in time, or stdout closed.
    pub fn next_json(&mut self, deadline: Instant) -> Result<Value, String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).map_err(|e| match e {
                RecvTimeoutError::Timeout => {
                    format!("the client said nothing more in time\n{}", self.describe())
                }
                RecvTimeoutError::Disconnected => {
                    format!("the client closed stdout\n{}", self.describe())
                }
            })?;
            if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(line.trim()) {
                return Ok(value);
            }
        }
    }

    /// Status and output tails, for failure messages.
    pub fn describe(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => status.to_string(),
            _ => "running".to_owned(),
        };
        let stdout = self.stdout.lock().map(|s| s.clone()).unwrap_or_default();
        format!(
            "client status: {status}\n--- stdout (tail) ---\n{}\n--- stderr (tail) ---\n{}",
            crate::process::tail(&stdout, 6000),
            crate::process::tail(&self.stderr.text(), 6000)
        )
    }

    /// Waits (bounded) for it to exit; `Ok(true)` on status 0.
    ///
    /// # Errors
    ///
    /// Still running at the limit (then killed).
    pub fn wait(&mut self, limit: Duration) -> Result<bool, String> {
        self.stdin = None;
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.reaped = true;
                crate::process::kill_group(self.child.id());
                return Ok(status.success());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the client did not exit within {limit:?}\n{}",
                    self.describe()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Interactive {
    fn drop(&mut self) {
        if !self.reaped {
            crate::process::kill_group(self.child.id());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs a client script's line protocol to its report:
/// sends `plan`; on `{"authorize": URL}` calls `browser(URL)` and answers
/// `{"redirect": FINAL_URL}`; on `{"pause": LABEL, …}` calls
/// `pause(message)` and answers `{"continue": true}`; returns the
/// `report` of `{"report": …}`, or fails on `{"fatal": …}`.
///
/// # Errors
///
/// The client fails, stops talking, or `browser` / `pause` fail.
pub fn drive_client(
    command: Command,
    plan: &Value,
    limit: Duration,
    browser: &mut dyn FnMut(&str) -> Result<String, String>,
    pause: &mut dyn FnMut(&Value) -> Result<(), String>,
) -> Result<Value, String> {
    let deadline = Instant::now() + limit;
    let mut client = Interactive::spawn(command)?;
    client.send(plan)?;
    loop {
        let message = client.next_json(deadline)?;
        if let Some(url) = message["authorize"].as_str() {
            let redirect = browser(url)
                .map_err(|e| format!("the sign-in failed: {e}\n{}", client.describe()))?;
            client.send(&json!({ "redirect": redirect }))?;
        } else if message.get("pause").is_some() {
            pause(&message).map_err(|e| {
                format!("at pause {}: {e}\n{}", message["pause"], client.describe())
            })?;
            client.send(&json!({"continue": true}))?;
        } else if let Some(report) = message.get("report") {
            let report = report.clone();
            let ok = client.wait(
                deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_secs(5)),
            )?;
            if !ok {
                return Err(format!(
                    "the client exited with an error after its report\n{}",
                    client.describe()
                ));
            }
            return Ok(report);
        } else if let Some(fatal) = message.get("fatal") {
            return Err(format!("the client failed: {fatal}\n{}", client.describe()));
        }
    }
}
