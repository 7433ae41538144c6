//! Headless Chromium driven through `chromedriver` with W3C WebDriver JSON
//! over HTTP (Debian's `chromium` and `chromium-driver`).
//!
//! [`ChromeDriver::start`] runs `chromedriver --port=0` (the OS picks the
//! port; it is read from the "started successfully on port N" line) and is
//! killed by its id on drop; [`Session`] is one headless browser with a
//! fresh profile, deleted on drop. Chromium resolves no host name but
//! loopback (`--host-resolver-rules`) and runs without its background
//! services, so a test browser reaches nothing beyond this machine.
//! [`sign_in`] walks toolforge's consent page and the test provider's
//! login and consent pages like a person would, by clicking.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http::{self, Request};
use crate::server::ScratchDir;

/// Environment variable that turns a missing browser into a skip.
pub const SKIP_BROWSER_ENV: &str = "TOOLFORGE_SKIP_BROWSER";
/// The Chromium binary.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// The driver binary.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The W3C element reference key.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";
/// Timeout of one WebDriver command (navigation included).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// What is missing for the browser tests, if anything.
pub fn browser_missing() -> Option<String> {
    for (path, package) in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")] {
        if !std::path::Path::new(path).is_file() {
            return Some(format!("{path} is missing (Debian package `{package}`)"));
        }
    }
    None
}

/// `Ok(true)` when Chromium and chromedriver are present, `Ok(false)` (after
/// a loud SKIPPED line) when they are missing and `TOOLFORGE_SKIP_BROWSER=1`.
///
/// # Errors
///
/// Missing without the skip flag: the message names the install command.
pub fn require_browser(test: &str) -> Result<bool, String> {
    match browser_missing() {
        None => Ok(true),
        Some(why) if std::env::var(SKIP_BROWSER_ENV).is_ok_and(|v| v == "1") => {
            crate::clients::announce_skip(test, &format!("{why} and {SKIP_BROWSER_ENV}=1 is set"));
            Ok(false)
        }
        Some(why) => Err(format!(
            "{test}: {why}: run `apt-get install chromium chromium-driver` (.ci/run does), \
             or set {SKIP_BROWSER_ENV}=1 to skip"
        )),
    }
}

/// A running chromedriver; killed on drop.
#[derive(Debug)]
pub struct ChromeDriver {
    child: Child,
    addr: SocketAddr,
}

impl ChromeDriver {
    /// Starts `chromedriver --port=0` and waits (bounded) for its port.
    ///
    /// # Errors
    ///
    /// It cannot start or prints no port in time.
    pub fn start() -> Result<ChromeDriver, String> {
        let mut child = Command::new(CHROMEDRIVER)
            .args(["--port=0", "--allowed-ips=127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {CHROMEDRIVER}: {e}"))?;
        let (tx, rx) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let port = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                let _ = child.kill();
                let _ = child.wait();
                return Err(
                    "chromedriver printed no `started successfully on port N` line".to_owned(),
                );
            };
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                break rest
                    .trim_end_matches('.')
                    .trim()
                    .parse::<u16>()
                    .map_err(|e| format!("{line}: {e}"))?;
            }
        };
        Ok(ChromeDriver {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        })
    }

    /// Sends one WebDriver command and returns its `value`.
    ///
    /// # Errors
    ///
    /// Transport failures, or a WebDriver error (its `error` and `message`).
    pub fn command(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let mut headers = Vec::new();
        let body = body.map(|b| {
            headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
            b.to_string().into_bytes()
        });
        let request = Request {
            method: method.to_owned(),
            target: path.to_owned(),
            headers,
            body,
        };
        let response = http::send(self.addr, &request, COMMAND_TIMEOUT)
            .map_err(|e| format!("WebDriver {method} {path}: {e}"))?;
        let value: Value = serde_json::from_slice(&response.body)
            .map_err(|e| format!("WebDriver {method} {path}: not JSON ({e})"))?;
        if response.status != 200 {
            return Err(format!(
                "WebDriver {method} {path}: {} {}: {}",
                response.status,
                value["value"]["error"],
                crate::mcp::clip(value["value"]["message"].as_str().unwrap_or_default(), 500)
            ));
        }
        Ok(value["value"].clone())
    }

    /// Opens a headless Chromium session with a fresh profile.
    ///
    /// # Errors
    ///
    /// The session cannot be created.
    pub fn session(&self) -> Result<Session<'_>, String> {
        let profile = ScratchDir::new()?;
        let mut args = vec![
            "--headless=new".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--no-first-run".to_owned(),
            "--no-default-browser-check".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-default-apps".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-extensions".to_owned(),
            "--metrics-recording-only".to_owned(),
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1"
                .to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        if is_root() {
            args.push("--no-sandbox".to_owned());
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "pageLoadStrategy": "normal",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}});
        let value = self.command("POST", "/session", Some(&caps))?;
        let id = value["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no sessionId in {value}"))?
            .to_owned();
        Ok(Session {
            driver: self,
            id,
            _profile: profile,
        })
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// One browser session; deleted (Chromium closed) on drop.
#[derive(Debug)]
pub struct Session<'a> {
    driver: &'a ChromeDriver,
    id: String,
    _profile: ScratchDir,
}

impl Session<'_> {
    fn cmd(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        self.driver
            .command(method, &format!("/session/{}{path}", self.id), body)
    }

    /// Navigates to `url`.
    ///
    /// # Errors
    ///
    /// The navigation fails.
    pub fn goto(&self, url: &str) -> Result<(), String> {
        self.cmd("POST", "/url", Some(&json!({ "url": url })))
            .map(|_| ())
    }

    /// The current URL.
    ///
    /// # Errors
    ///
    /// The command fails.
    pub fn url(&self) -> Result<String, String> {
        Ok(self
            .cmd("GET", "/url", None)?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// The page's HTML.
    ///
    /// # Errors
    ///
    /// The command fails.
    pub fn source(&self) -> Result<String, String> {
        Ok(self
            .cmd("GET", "/source", None)?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// The element matching `css`, if there is one now.
    ///
    /// # Errors
    ///
    /// The command fails for another reason than "no such element".
    pub fn find(&self, css: &str) -> Result<Option<String>, String> {
        match self.cmd(
            "POST",
            "/element",
            Some(&json!({"using": "css selector", "value": css})),
        ) {
            Ok(value) => Ok(value[ELEMENT_KEY].as_str().map(str::to_owned)),
            Err(e) if e.contains("no such element") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Waits (polling, bounded) for an element matching `css`.
    ///
    /// # Errors
    ///
    /// None appears within `limit` (the page's URL and a clip of it are in the message).
    pub fn wait_for(&self, css: &str, limit: Duration) -> Result<String, String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(element) = self.find(css)? {
                return Ok(element);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "no `{css}` within {limit:?} at {}:\n{}",
                    crate::browser::clip_url(&self.url().unwrap_or_default()),
                    crate::mcp::clip(&self.source().unwrap_or_default(), 2000)
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Clicks an element.
    ///
    /// # Errors
    ///
    /// The command fails.
    pub fn click(&self, element: &str) -> Result<(), String> {
        self.cmd(
            "POST",
            &format!("/element/{element}/click"),
            Some(&json!({})),
        )
        .map(|_| ())
    }

    /// Types `text` into an element.
    ///
    /// # Errors
    ///
    /// The command fails.
    pub fn type_text(&self, element: &str, text: &str) -> Result<(), String> {
        self.cmd(
            "POST",
            &format!("/element/{element}/value"),
            Some(&json!({ "text": text })),
        )
        .map(|_| ())
    }

    /// A property of an element (`checked`, `value`, …).
    ///
    /// # Errors
    ///
    /// The command fails.
    pub fn property(&self, element: &str, name: &str) -> Result<Value, String> {
        self.cmd("GET", &format!("/element/{element}/property/{name}"), None)
    }

    /// Waits (polling, bounded) until the current URL starts with `prefix`.
    ///
    /// # Errors
    ///
    /// It does not within `limit`.
    pub fn wait_url(&self, prefix: &str, limit: Duration) -> Result<String, String> {
        let deadline = Instant::now() + limit;
        loop {
            let url = self.url()?;
            if url.starts_with(prefix) {
                return Ok(url);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the browser did not reach {prefix} within {limit:?}; it is at {}:\n{}",
                    crate::browser::clip_url(&url),
                    crate::mcp::clip(&self.source().unwrap_or_default(), 2000)
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let _ = self
            .driver
            .command("DELETE", &format!("/session/{}", self.id), None);
    }
}

/// What the browser saw on toolforge's consent page.
#[derive(Debug, Clone, Default)]
pub struct BrowserSignIn {
    /// The final URL (the client's redirect URI with `code`, `state`, `iss`).
    pub final_url: String,
    /// Whether `#exposure-minimal` was checked by default.
    pub minimal_checked_by_default: bool,
    /// The consent page's HTML as rendered.
    pub consent_html: String,
}

/// Signs in like a person: opens `authorize_url` (toolforge's consent
/// page), clicks `#approve`, types `login` / `password` into the
/// provider's sign-in page, clicks Continue on its consent page, and waits
/// for the browser to land on a URL starting with `redirect_prefix`.
///
/// # Errors
///
/// A page element does not show up in time, or a command fails.
pub fn sign_in(
    session: &Session<'_>,
    authorize_url: &str,
    redirect_prefix: &str,
    login: &str,
    password: &str,
) -> Result<BrowserSignIn, String> {
    sign_in_choosing(
        session,
        authorize_url,
        redirect_prefix,
        login,
        password,
        None,
    )
}

/// [`sign_in`], first clicking the consent template `#exposure-{choice}`
/// (`read_only`, `minimal`, …) when `choice` is given.
///
/// # Errors
///
/// As [`sign_in`], or the template is not on the page.
pub fn sign_in_choosing(
    session: &Session<'_>,
    authorize_url: &str,
    redirect_prefix: &str,
    login: &str,
    password: &str,
    choice: Option<&str>,
) -> Result<BrowserSignIn, String> {
    let step = Duration::from_secs(30);
    session.goto(authorize_url)?;
    let approve = session.wait_for("#approve", step)?;
    let minimal = session.wait_for("#exposure-minimal", step)?;
    let minimal_checked_by_default = session.property(&minimal, "checked")? == Value::Bool(true);
    let consent_html = session.source()?;
    if let Some(choice) = choice {
        session.click(&session.wait_for(&format!("#exposure-{choice}"), step)?)?;
    }
    session.click(&approve)?;
    let login_box = session.wait_for("#login", step)?;
    session.type_text(&login_box, login)?;
    let password_box = session.wait_for("#password", step)?;
    session.type_text(&password_box, password)?;
    session.click(&session.wait_for("#sign-in", step)?)?;
    session.click(&session.wait_for("#continue", step)?)?;
    let final_url = session.wait_url(redirect_prefix, step)?;
    Ok(BrowserSignIn {
        final_url,
        minimal_checked_by_default,
        consent_html,
    })
}
