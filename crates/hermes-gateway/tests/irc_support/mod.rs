//! A real IRC daemon for the IRC adapter tests — Debian's `ngircd`, started on a free
//! loopback port from a config written into a temp dir (`ngircd -n -f <conf>`, no daemon) —
//! and a raw TCP client that plays the human user.
//!
//! When `ngircd` is missing the tests print why and pass, unless `HERMES_REQUIRE_SERVERS` or
//! `CI` is set (then a missing server is a failure: `.ci/run` installs the package).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// Bound for anything a test waits on; reaching it means a hang, not slowness.
pub const HANG: Duration = Duration::from_secs(30);

/// The `ngircd` binary, or `None` after printing why the test is skipped. Panics when it is
/// missing and `HERMES_REQUIRE_SERVERS` or `CI` is set.
pub fn ngircd_binary() -> Option<PathBuf> {
    let found = [
        "/usr/sbin/ngircd",
        "/usr/bin/ngircd",
        "/usr/local/sbin/ngircd",
    ]
    .iter()
    .map(PathBuf::from)
    .chain(
        std::env::var_os("PATH")
            .map(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("ngircd"))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default(),
    )
    .find(|p| p.is_file());
    if found.is_none() {
        let required = ["HERMES_REQUIRE_SERVERS", "CI"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
        assert!(
            !required,
            "ngircd is not installed but HERMES_REQUIRE_SERVERS/CI is set (apt-get install ngircd)"
        );
        eprintln!("skipped: no `ngircd` (Debian package ngircd; .ci/run installs it)");
    }
    found
}

/// A free loopback port (bound and released; fine for a test's own server).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// TLS material for the daemon: a throwaway CA and a `localhost` certificate it signed.
pub struct TlsFiles {
    /// The CA certificate (PEM), for `IRC_TLS_CA_FILE`.
    pub ca: PathBuf,
    /// The server certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
}

/// Makes a CA and a server certificate for `localhost` with the `openssl` command; `None`
/// when it is not installed.
pub fn make_tls(dir: &Path) -> Option<TlsFiles> {
    let run = |args: &[&str]| {
        std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    std::fs::write(
        dir.join("leaf.ext"),
        "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let ok = run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=hermes test CA",
    ]) && run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "key.pem",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=localhost",
    ]) && run(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "cert.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
    if !ok {
        eprintln!("no usable `openssl` command; the TLS part is skipped");
        return None;
    }
    // ngircd drops root to `nobody` after reading its files; make them readable anyway.
    for f in ["cert.pem", "key.pem"] {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o644));
    }
    Some(TlsFiles {
        ca: dir.join("ca.pem"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    })
}

/// A running `ngircd` on 127.0.0.1.
pub struct Ngircd {
    binary: PathBuf,
    conf: PathBuf,
    /// The plain-text port.
    pub port: u16,
    /// The TLS port, when TLS files were given.
    pub tls_port: Option<u16>,
    child: Option<Child>,
    _dir: Arc<tempfile::TempDir>,
}

impl Ngircd {
    /// Writes a config (server `irc.hermes.test`, short ping timeouts so the bot must answer
    /// the server's PINGs within the test) and starts the daemon.
    pub async fn start(binary: PathBuf, tls: Option<&TlsFiles>) -> Ngircd {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        let port = free_port();
        let tls_port = tls.map(|_| free_port());
        let mut conf = format!(
            "[Global]\nName = irc.hermes.test\nInfo = hermes test server\nListen = 127.0.0.1\n\
             Ports = {port}\nMotdPhrase = hermes test\nAdminInfo1 = test\nAdminInfo2 = test\nAdminEMail = t@example.invalid\n\
             [Limits]\nPingTimeout = 5\nPongTimeout = 5\nMaxNickLength = 30\nConnectRetry = 60\n\
             [Options]\nPAM = no\nIdent = no\nDNS = no\n"
        );
        if let (Some(t), Some(p)) = (tls, tls_port) {
            conf.push_str(&format!(
                "[SSL]\nCertFile = {}\nKeyFile = {}\nPorts = {p}\n",
                t.cert.display(),
                t.key.display()
            ));
        }
        let path = dir.path().join("ngircd.conf");
        std::fs::write(&path, conf).unwrap();
        let mut d = Ngircd {
            binary,
            conf: path,
            port,
            tls_port,
            child: None,
            _dir: dir,
        };
        d.spawn().await;
        d
    }

    async fn spawn(&mut self) {
        let child = Command::new(&self.binary)
            .arg("-n")
            .arg("-f")
            .arg(&self.conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start ngircd");
        self.child = Some(child);
        let deadline = Instant::now() + HANG;
        for port in std::iter::once(self.port).chain(self.tls_port) {
            while TcpStream::connect(("127.0.0.1", port)).await.is_err() {
                assert!(Instant::now() < deadline, "ngircd did not listen on {port}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    /// Kills the daemon (every client is dropped at once).
    pub async fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.start_kill();
            let _ = c.wait().await;
        }
    }

    /// Kills the daemon and starts it again on the same ports.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.spawn().await;
    }
}

/// One received line and when it arrived.
#[derive(Debug, Clone)]
pub struct Line {
    /// Arrival time.
    pub at: Instant,
    /// The raw bytes including CR LF.
    pub raw: Vec<u8>,
}

impl Line {
    /// The line as text (panics when the server relayed invalid UTF-8).
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.raw).expect("a line is valid UTF-8")
    }
}

/// A raw IRC client playing the human: answers PINGs, records every line.
pub struct Human {
    /// Our nick.
    pub nick: String,
    writer: Arc<tokio::sync::Mutex<OwnedWriteHalf>>,
    lines: Arc<Mutex<Vec<Line>>>,
}

impl Human {
    /// Connects to `port`, registers as `nick` and waits for the welcome.
    pub async fn connect(port: u16, nick: &str) -> Human {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (read, write) = stream.into_split();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let writer = Arc::new(tokio::sync::Mutex::new(write));
        let (sink, ponger) = (lines.clone(), writer.clone());
        tokio::spawn(async move {
            let mut reader = BufReader::new(read);
            loop {
                let mut raw = Vec::new();
                match reader.read_until(b'\n', &mut raw).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if let Some(token) = raw.strip_prefix(b"PING ") {
                    let mut pong = b"PONG ".to_vec();
                    pong.extend_from_slice(token);
                    let _ = ponger.lock().await.write_all(&pong).await;
                }
                sink.lock().unwrap().push(Line {
                    at: Instant::now(),
                    raw,
                });
            }
        });
        let human = Human {
            nick: nick.to_string(),
            writer,
            lines,
        };
        human.send(&format!("NICK {nick}")).await;
        human.send(&format!("USER {nick} 0 * :test human")).await;
        human
            .wait_line("the welcome", |l| l.contains(" 001 "))
            .await;
        human
    }

    /// Sends one raw line (CR LF added).
    pub async fn send(&self, line: &str) {
        let mut w = self.writer.lock().await;
        let _ = w.write_all(format!("{line}\r\n").as_bytes()).await;
    }

    /// Joins `channel` and waits for the end of its names list.
    pub async fn join(&self, channel: &str) {
        let before = self.lines().len();
        self.send(&format!("JOIN {channel}")).await;
        self.wait_line_after(before, "our JOIN", |l| l.contains(" 366 "))
            .await;
    }

    /// Every line received so far.
    pub fn lines(&self) -> Vec<Line> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits until a line matching `pred` arrives; returns it.
    pub async fn wait_line(&self, what: &str, pred: impl Fn(&str) -> bool) -> Line {
        self.wait_line_after(0, what, pred).await
    }

    /// As [`Human::wait_line`], looking only at lines after the first `skip`.
    pub async fn wait_line_after(
        &self,
        skip: usize,
        what: &str,
        pred: impl Fn(&str) -> bool,
    ) -> Line {
        let deadline = Instant::now() + HANG;
        loop {
            if let Some(l) = self
                .lines()
                .into_iter()
                .skip(skip)
                .find(|l| pred(&String::from_utf8_lossy(&l.raw)))
            {
                return l;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The texts of the PRIVMSGs `from` sent to `to` (a channel or our nick), with the lines.
    pub fn privmsgs(&self, from: &str, to: &str) -> Vec<(Line, String)> {
        let head = format!(":{from}!");
        let mid = format!(" PRIVMSG {to} :");
        self.lines()
            .into_iter()
            .filter_map(|l| {
                let text = String::from_utf8_lossy(&l.raw).to_string();
                if !text.starts_with(&head) {
                    return None;
                }
                let (_, body) = text.split_once(&mid)?;
                let body = body.trim_end_matches(['\r', '\n']).to_string();
                Some((l, body))
            })
            .collect()
    }
}
