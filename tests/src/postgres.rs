//! A throwaway PostgreSQL server for tests: `initdb` into a temporary
//! directory, `pg_ctl start` on a free loopback port (its socket in the
//! same directory), databases made with `createdb`, and `pg_ctl stop -m
//! immediate` on drop (the postmaster killed by its pid if that fails).
//!
//! The binaries are looked up on `PATH` (`initdb`) and then under
//! `/usr/lib/postgresql/*/bin` (Debian's `postgresql` package, newest
//! version first). `initdb` refuses to run as root, so as root the server
//! runs as `postgres` (or `nobody`) through `runuser`, and the temporary
//! directory is handed to that user.
//!
//! Without the binaries [`Postgres::start_or_skip`] fails with a message
//! saying how to install them, unless `TOOLFORGE_SKIP_POSTGRES=1`, when it
//! prints `SKIPPED` and returns `None`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::process;

/// The superuser `initdb` creates (trust authentication on loopback).
pub const USER: &str = "toolforge";

/// How long each PostgreSQL program may run.
const STEP_LIMIT: Duration = Duration::from_secs(60);

/// How long the server may take to accept connections.
const READY_LIMIT: Duration = Duration::from_secs(30);

/// How many ports to try when another process takes the chosen one.
const PORT_ATTEMPTS: usize = 5;

/// A running PostgreSQL server; stopped when dropped.
#[derive(Debug)]
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<String>,
    port: u16,
}

/// The directory holding `initdb`, `pg_ctl`, `createdb` and `pg_isready`.
#[must_use]
pub fn bin_dir() -> Option<PathBuf> {
    let complete = |dir: &Path| {
        ["initdb", "pg_ctl", "createdb", "pg_isready"]
            .iter()
            .all(|p| dir.join(p).is_file())
    };
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("initdb"))
            .filter(|initdb| initdb.is_file())
            .filter_map(|initdb| std::fs::canonicalize(initdb).ok())
            .filter_map(|initdb| initdb.parent().map(Path::to_path_buf))
            .collect::<Vec<_>>()
    });
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    debian.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    on_path
        .chain(debian.into_iter().map(|(_, dir)| dir))
        .find(|dir| complete(dir))
}

/// The unprivileged user to run the server as, when this process is root.
fn unprivileged_user() -> Result<Option<String>, String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| format!("cannot run `id -u`: {e}"))?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Ok(None);
    }
    for user in ["postgres", "nobody"] {
        let known = Command::new("id").arg("-u").arg(user).output();
        if known.is_ok_and(|o| o.status.success()) {
            return Ok(Some(user.to_owned()));
        }
    }
    Err("running as root and neither `postgres` nor `nobody` exists to run initdb".to_owned())
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("cannot find a free loopback port: {e}"))
}

impl Postgres {
    /// Starts a server, or `None` (after printing `SKIPPED`) when the
    /// binaries are missing and `TOOLFORGE_SKIP_POSTGRES=1`.
    ///
    /// # Errors
    ///
    /// The binaries are missing (and skipping was not asked for), or the
    /// server cannot be set up or started.
    pub fn start_or_skip() -> Result<Option<Self>, String> {
        if bin_dir().is_none() && std::env::var("TOOLFORGE_SKIP_POSTGRES").as_deref() == Ok("1") {
            eprintln!(
                "\n*** SKIPPED: no PostgreSQL binaries (initdb) on PATH or in \
                 /usr/lib/postgresql/*/bin, and TOOLFORGE_SKIP_POSTGRES=1 ***\n"
            );
            return Ok(None);
        }
        Self::start().map(Some)
    }

    /// Starts a server on a free loopback port.
    ///
    /// # Errors
    ///
    /// The binaries are missing, or `initdb` / `pg_ctl start` failed.
    pub fn start() -> Result<Self, String> {
        let bin = bin_dir().ok_or(
            "PostgreSQL binaries not found: no `initdb` on PATH or in \
             /usr/lib/postgresql/*/bin. Install Debian's `postgresql` package \
             (apt-get install -y postgresql; .ci/run does), or set \
             TOOLFORGE_SKIP_POSTGRES=1 to skip the PostgreSQL tests.",
        )?;
        let run_as = unprivileged_user()?;
        let dir = tempfile::Builder::new()
            .prefix("toolforge-pg-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
        if let Some(user) = &run_as {
            let mut chown = Command::new("chown");
            chown.arg(format!("{user}:")).arg(dir.path());
            let done = process::run(chown, b"", STEP_LIMIT)?;
            if !done.success() {
                return Err(format!(
                    "chown of the data directory failed\n{}",
                    done.describe()
                ));
            }
        }
        let mut server = Self {
            dir,
            bin,
            run_as,
            port: 0,
        };
        let mut initdb = server.command("initdb");
        initdb.arg("-D").arg(server.data()).args([
            "-U",
            USER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        ]);
        server.step(initdb, "initdb")?;
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            server.port = free_port()?;
            match server.pg_ctl_start() {
                Ok(()) => {
                    server.wait_ready()?;
                    return Ok(server);
                }
                // Most likely the port was taken between choosing and binding.
                Err(e) => last = e,
            }
        }
        Err(format!(
            "pg_ctl start failed {PORT_ATTEMPTS} times; last:\n{last}"
        ))
    }

    /// The loopback port it listens on.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `name` (no password: trust authentication).
    #[must_use]
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates database `name` and returns its URL.
    ///
    /// # Errors
    ///
    /// `createdb` failed (for one, the name is taken).
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        let mut createdb = Command::new(self.bin.join("createdb"));
        createdb
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                USER,
                name,
            ])
            .env("PGCONNECT_TIMEOUT", "10");
        self.step(createdb, "createdb")?;
        Ok(self.url(name))
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        match &self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(program);
                command
            }
            None => Command::new(program),
        }
    }

    fn step(&self, command: Command, what: &str) -> Result<(), String> {
        let done = process::run(command, b"", STEP_LIMIT)?;
        if done.success() {
            Ok(())
        } else {
            Err(format!("{what} failed\n{}", done.describe()))
        }
    }

    fn pg_ctl_start(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let mut start = self.command("pg_ctl");
        start
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .args(["-w", "-t", "30", "-o", &options, "start"]);
        self.step(start, "pg_ctl start").map_err(|e| {
            let log =
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            format!(
                "{e}\n--- server.log (tail) ---\n{}",
                process::tail(&log, 4000)
            )
        })
    }

    /// Polls `pg_isready` (each try bounded) until the server accepts
    /// connections on its port, at most [`READY_LIMIT`].
    fn wait_ready(&self) -> Result<(), String> {
        let started = Instant::now();
        loop {
            let mut ready = Command::new(self.bin.join("pg_isready"));
            ready.args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                USER,
                "-t",
                "2",
            ]);
            let done = process::run(ready, b"", Duration::from_secs(5))?;
            if done.success() {
                return Ok(());
            }
            if started.elapsed() > READY_LIMIT {
                return Err(format!(
                    "PostgreSQL on port {} not ready after {READY_LIMIT:?}\n{}",
                    self.port,
                    done.describe()
                ));
            }
            // A poll interval (pg_ctl -w has normally waited already).
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The postmaster's pid, from `postmaster.pid`.
    fn pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.data().join("postmaster.pid"))
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let pid = self.pid();
        let mut stop = self.command("pg_ctl");
        stop.arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "-t", "10", "stop"]);
        let stopped = process::run(stop, b"", Duration::from_secs(20)).is_ok_and(|d| d.success());
        if !stopped && let Some(pid) = pid {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}
