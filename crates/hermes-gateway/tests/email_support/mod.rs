//! Real mail servers for the email adapter tests: Debian's Dovecot (`dovecot-imapd`) as the
//! IMAP server — started in the foreground (`dovecot -F -c <conf>`) from a config written
//! into a temp dir, IMAPS on a free loopback port with a certificate of a throwaway CA, one
//! passwd-file user, maildir in the temp dir — with mail delivered by Dovecot's own LDA
//! (`dovecot-lda -d <user>`, as an MTA would), and aiosmtpd from PyPI (cached venv,
//! `scripts/smtp-test-server.sh`) as the SMTP server, STARTTLS or implicit TLS with AUTH,
//! keeping what it accepts as files.
//!
//! When a server is missing the tests print why and pass, unless `HERMES_REQUIRE_SERVERS` or
//! `CI` is set (then it is a failure: `.ci/run` installs both).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::time::Instant;

pub use crate::irc_support::{TlsFiles, free_port, make_tls};

/// Bound for anything a test waits on; reaching it means a hang, not slowness.
pub const HANG: Duration = Duration::from_secs(30);
/// The bot's mailbox and login.
pub const BOT: &str = "bot@example.org";
/// The bot's password on both servers.
pub const PASSWORD: &str = "s3cret pass";
/// The authserv-id the "receiving server" stamps into `Authentication-Results`.
pub const AUTHSERV: &str = "mx.example.org";

fn required() -> bool {
    ["HERMES_REQUIRE_SERVERS", "CI"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
}

/// The Dovecot binaries (`dovecot`, `dovecot-lda`) and aiosmtpd's Python, or `None` after
/// printing why the test is skipped. Panics when one is missing and `HERMES_REQUIRE_SERVERS`
/// or `CI` is set.
pub fn servers() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let dovecot = ["/usr/sbin/dovecot", "/usr/bin/dovecot"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    let lda = PathBuf::from("/usr/lib/dovecot/dovecot-lda");
    let python = std::env::var_os("HERMES_SMTP_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(PathBuf::from(home).join(".cache/hermes-aiosmtpd-1.4.6/bin/python"))
        })
        .filter(|p| p.is_file());
    match (dovecot, lda.is_file(), python) {
        (Some(d), true, Some(p)) => Some((d, lda, p)),
        (d, l, p) => {
            let why = format!(
                "dovecot: {}, dovecot-lda: {}, aiosmtpd: {} (Debian package dovecot-imapd; scripts/smtp-test-server.sh, HERMES_SMTP_PYTHON; .ci/run installs both)",
                d.is_some(),
                l,
                p.is_some()
            );
            assert!(
                !required(),
                "a mail server is missing but HERMES_REQUIRE_SERVERS/CI is set: {why}"
            );
            eprintln!("skipped: {why}");
            None
        }
    }
}

async fn wait_port(port: u16, what: &str) {
    let deadline = Instant::now() + HANG;
    while TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn terminate(child: &mut Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
    }
    if tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

/// A running Dovecot on 127.0.0.1 (IMAPS only).
pub struct Dovecot {
    binary: PathBuf,
    lda: PathBuf,
    conf: PathBuf,
    /// The IMAPS port.
    pub port: u16,
    child: Option<Child>,
    dir: Arc<tempfile::TempDir>,
}

impl Dovecot {
    /// Writes the config and starts the server. As root, mail is owned by `nobody` (Dovecot
    /// refuses uid 0 for mail); otherwise by the current user.
    pub async fn start(binary: PathBuf, lda: PathBuf, tls: &TlsFiles) -> Dovecot {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        let root = dir.path();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        for d in ["run", "state", "mail", "home"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        let uid = String::from_utf8(
            std::process::Command::new("id")
                .arg("-u")
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
        .trim()
        .to_string();
        let (mail_uid, users) = if uid == "0" {
            for d in ["mail", "home"] {
                std::process::Command::new("chown")
                    .args(["65534:65534", &root.join(d).display().to_string()])
                    .status()
                    .unwrap();
            }
            ("uid=65534 gid=65534".to_string(), String::new())
        } else {
            let user = String::from_utf8(
                std::process::Command::new("id")
                    .arg("-un")
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap()
            .trim()
            .to_string();
            let gid = String::from_utf8(
                std::process::Command::new("id")
                    .arg("-g")
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap()
            .trim()
            .to_string();
            (
                format!("uid={uid} gid={gid}"),
                format!("default_internal_user = {user}\ndefault_login_user = {user}\n"),
            )
        };
        std::fs::write(root.join("users"), format!("{BOT}:{{PLAIN}}{PASSWORD}\n")).unwrap();
        let port = free_port();
        let r = root.display();
        let conf = format!(
            "protocols = imap\nlisten = 127.0.0.1\nbase_dir = {r}/run\nstate_dir = {r}/state\n\
             log_path = {r}/dovecot.log\nssl = required\nssl_cert = <{cert}\nssl_key = <{key}\n\
             auth_mechanisms = plain login\nmail_location = maildir:{r}/mail/%u\n{users}\
             passdb {{\n  driver = passwd-file\n  args = scheme=PLAIN {r}/users\n}}\n\
             userdb {{\n  driver = static\n  args = {mail_uid} home={r}/home/%u\n}}\n\
             service imap-login {{\n  chroot =\n  inet_listener imap {{\n    port = 0\n  }}\n  \
             inet_listener imaps {{\n    port = {port}\n    ssl = yes\n  }}\n}}\n\
             service anvil {{\n  chroot =\n}}\n",
            cert = tls.cert.display(),
            key = tls.key.display(),
        );
        let path = root.join("dovecot.conf");
        std::fs::write(&path, conf).unwrap();
        let mut d = Dovecot {
            binary,
            lda,
            conf: path,
            port,
            child: None,
            dir,
        };
        d.spawn().await;
        d
    }

    async fn spawn(&mut self) {
        let child = Command::new(&self.binary)
            .arg("-F")
            .arg("-c")
            .arg(&self.conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start dovecot");
        self.child = Some(child);
        wait_port(self.port, "dovecot").await;
    }

    /// Stops the server (SIGTERM: the master ends its IMAP processes).
    pub async fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            terminate(&mut c).await;
        }
    }

    /// Stops the server and starts it again on the same port.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.spawn().await;
    }

    /// Delivers `raw` (an RFC 5322 message) to the bot's INBOX with Dovecot's LDA, as the
    /// MTA would; works while the server is stopped too.
    pub fn deliver(&self, raw: &str) {
        use std::io::Write as _;
        let mut child = std::process::Command::new(&self.lda)
            .arg("-c")
            .arg(&self.conf)
            .arg("-d")
            .arg(BOT)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dovecot-lda");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(raw.replace("\r\n", "\n").as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "dovecot-lda failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Files in the bot's maildir (`cur` and `new`).
    pub fn mail_count(&self) -> usize {
        ["cur", "new"]
            .iter()
            .map(|d| {
                std::fs::read_dir(self.dir.path().join("mail").join(BOT).join(d))
                    .map(|r| r.count())
                    .unwrap_or(0)
            })
            .sum()
    }

    /// The server's log (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("dovecot.log")).unwrap_or_default()
    }
}

/// How the SMTP server speaks TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpMode {
    /// Plain connect, `STARTTLS` required before AUTH.
    StartTls,
    /// TLS from the first byte (port 465 style).
    Tls,
}

/// One message the SMTP server accepted.
#[derive(Debug, Clone)]
pub struct Received {
    /// The message as sent.
    pub raw: Vec<u8>,
    /// `MAIL FROM`.
    pub mail_from: String,
    /// `RCPT TO`s.
    pub rcpt_to: Vec<String>,
    /// Whether the session was over TLS.
    pub tls: bool,
}

impl Received {
    /// The message parsed.
    pub fn parsed(&self) -> mail_parser::Message<'_> {
        mail_parser::MessageParser::default()
            .parse(&self.raw)
            .expect("a parsable message")
    }

    /// The raw message as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }
}

/// A running aiosmtpd on 127.0.0.1.
pub struct Smtp {
    /// Its port.
    pub port: u16,
    out: PathBuf,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Smtp {
    /// Starts the server in `mode` with `tls`'s certificate, accepting the bot's login.
    pub async fn start(python: &Path, mode: SmtpMode, tls: &TlsFiles) -> Smtp {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let port = free_port();
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/email_support/smtp_server.py");
        let mut child = Command::new(python)
            .arg(script)
            .args(["--port", &port.to_string()])
            .args([
                "--mode",
                match mode {
                    SmtpMode::StartTls => "starttls",
                    SmtpMode::Tls => "tls",
                },
            ])
            .arg("--cert")
            .arg(&tls.cert)
            .arg("--key")
            .arg(&tls.key)
            .args(["--user", BOT, "--password", PASSWORD])
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start aiosmtpd");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(HANG, lines.next_line()).await;
        assert!(
            matches!(ready, Ok(Ok(Some(ref l))) if l == "READY"),
            "aiosmtpd did not start: {ready:?}"
        );
        wait_port(port, "aiosmtpd").await;
        Smtp {
            port,
            out,
            child,
            _dir: dir,
        }
    }

    /// Every message accepted so far, in order.
    pub fn received(&self) -> Vec<Received> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&self.out)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "eml"))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|p| {
                let env: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(p.with_extension("json")).unwrap())
                        .unwrap();
                Received {
                    raw: std::fs::read(&p).unwrap(),
                    mail_from: env["mail_from"].as_str().unwrap_or_default().to_string(),
                    rcpt_to: env["rcpt_tos"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|v| v.as_str().map(String::from))
                                .collect()
                        })
                        .unwrap_or_default(),
                    tls: env["tls"].as_bool().unwrap_or(false),
                }
            })
            .collect()
    }

    /// Waits until `n` messages were accepted and returns them.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + HANG;
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {n} mails, got {}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the server.
    pub async fn stop(&mut self) {
        terminate(&mut self.child).await;
    }
}

/// An inbound mail as the receiving MTA would store it: `Return-Path` (the envelope
/// sender), the server's own `Authentication-Results` vouching for the sender's domain (when
/// `authenticated`), then the sender's headers and a plain-text body.
pub fn mail(
    from: &str,
    subject: &str,
    id: &str,
    extra: &str,
    body: &str,
    authenticated: bool,
) -> String {
    let addr = from
        .rsplit_once('<')
        .map(|(_, a)| a.trim_end_matches('>'))
        .unwrap_or(from);
    let domain = addr.rsplit_once('@').map(|(_, d)| d).unwrap_or("");
    let mut m = format!("Return-Path: <{addr}>\r\n");
    if authenticated {
        m.push_str(&format!(
            "Authentication-Results: {AUTHSERV}; spf=pass smtp.mailfrom={addr}; dmarc=pass header.from={domain}\r\n"
        ));
    }
    m.push_str(&format!(
        "From: {from}\r\nTo: {BOT}\r\nSubject: {subject}\r\nMessage-ID: <{id}>\r\nDate: Mon, 7 Dec 2026 12:00:00 +0000\r\nMIME-Version: 1.0\r\n{extra}"
    ));
    if !extra.contains("Content-Type") {
        m.push_str("Content-Type: text/plain; charset=utf-8\r\n");
    }
    m.push_str(&format!("\r\n{body}\r\n"));
    m
}
