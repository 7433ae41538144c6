//! Running a helper program (a Node or Python client script, the
//! conformance CLI) to completion with a time limit.
//!
//! The child runs in a process group of its own, so that on a timeout the
//! group (the child and anything it spawned, such as a stdio server a
//! Python client launched) is killed by its id; nothing outlives the test.

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Output kept per stream (its tail).
const MAX_OUTPUT: usize = 8 * 1024 * 1024;

/// What a finished (or killed) program left.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Exit status; `None` when it was killed at the time limit.
    pub status: Option<ExitStatus>,
    /// Everything it wrote to stdout (lossy UTF-8).
    pub stdout: String,
    /// Everything it wrote to stderr (lossy UTF-8).
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Finished {
    /// Whether it exited with status 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// A report for failure messages: status, then both streams (tails).
    pub fn describe(&self) -> String {
        let status = match self.status {
            Some(s) => s.to_string(),
            None => format!("killed after {:?} (time limit)", self.elapsed),
        };
        format!(
            "status: {status}\n--- stdout (tail) ---\n{}\n--- stderr (tail) ---\n{}",
            tail(&self.stdout, 6000),
            tail(&self.stderr, 6000)
        )
    }
}

/// Kills a child and its process group on drop (unless it was reaped).
struct GroupGuard {
    child: Child,
    reaped: bool,
}

impl GroupGuard {
    fn kill(&mut self) {
        if self.reaped {
            return;
        }
        kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends SIGKILL to the process group `pgid` (a group this module created
/// with the child as its leader).
pub fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Runs `command` with `input` on its stdin (then closed), collecting both
/// output streams, and kills its process group when `limit` passes.
///
/// # Errors
///
/// The program cannot be spawned.
pub fn run(mut command: Command, input: &[u8], limit: Duration) -> Result<Finished, String> {
    let program = format!("{:?}", command.get_program());
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let child = command
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let mut guard = GroupGuard {
        child,
        reaped: false,
    };
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let mut readers = Vec::new();
    if let Some(pipe) = guard.child.stdout.take() {
        let sink = Arc::clone(&stdout);
        readers.push(std::thread::spawn(move || collect(pipe, &sink)));
    }
    if let Some(pipe) = guard.child.stderr.take() {
        let sink = Arc::clone(&stderr);
        readers.push(std::thread::spawn(move || collect(pipe, &sink)));
    }
    if let Some(mut stdin) = guard.child.stdin.take() {
        let input = input.to_vec();
        // A writer thread: a child that does not read cannot block us.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let deadline = started + limit;
    let status = loop {
        match guard.child.try_wait() {
            Ok(Some(status)) => {
                guard.reaped = true;
                // The leader exited; anything it left behind in its group goes too.
                kill_group(guard.child.id());
                break Some(status);
            }
            Ok(None) if Instant::now() >= deadline => {
                guard.kill();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("waiting for {program}: {e}")),
        }
    };
    for reader in readers {
        let _ = reader.join();
    }
    let text = |buf: &Arc<Mutex<Vec<u8>>>| {
        String::from_utf8_lossy(&buf.lock().map(|b| b.clone()).unwrap_or_default()).into_owned()
    };
    Ok(Finished {
        status,
        stdout: text(&stdout),
        stderr: text(&stderr),
        elapsed: started.elapsed(),
    })
}

fn collect(mut pipe: impl std::io::Read, sink: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        if let Ok(mut sink) = sink.lock() {
            sink.extend_from_slice(&buf[..n]);
            if sink.len() > MAX_OUTPUT {
                let cut = sink.len() - MAX_OUTPUT / 2;
                sink.drain(..cut);
            }
        }
    }
}

/// The last `max` characters of `text`.
pub fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let rest: String = text.chars().skip(count - max).collect();
    format!("[… {} chars before]{rest}", count - max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_output_and_kills_at_the_limit() {
        let mut cat = Command::new("sh");
        cat.args(["-c", "cat; echo err >&2"]);
        let done = run(cat, b"hello", Duration::from_secs(20)).unwrap();
        assert!(done.success(), "{}", done.describe());
        assert_eq!(
            (done.stdout.as_str(), done.stderr.as_str()),
            ("hello", "err\n")
        );

        let mut sleeper = Command::new("sh");
        // The grandchild `sleep` is in the same group and dies with it.
        sleeper.args(["-c", "sleep 30 & sleep 30"]);
        let done = run(sleeper, b"", Duration::from_millis(300)).unwrap();
        assert!(done.status.is_none(), "{}", done.describe());
        assert!(done.elapsed < Duration::from_secs(10));
        assert!(done.describe().contains("killed"));
    }
}
