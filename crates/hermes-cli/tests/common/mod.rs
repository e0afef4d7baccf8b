//! Shared harness of the CLI end-to-end tests: the `hermes` binary on a temporary
//! HERMES_HOME (and HOME), a scratch working directory and a mock provider configured as the
//! `custom` model — no network, no keys from the machine's environment.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use hermes_testkit::{MockProvider, TempHome};

/// Runs `hermes args…` with only PATH, HERMES_HOME, HOME, NO_COLOR and `vars` set.
pub async fn hermes_env(home: &Path, cwd: &Path, args: &[&str], vars: &[(&str, String)]) -> Output {
    let home = home.to_path_buf();
    let cwd = cwd.to_path_buf();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut cmd = assert_cmd::Command::cargo_bin("hermes").unwrap();
        cmd.env_clear()
            .env("HERMES_HOME", &home)
            .env("HOME", &home)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("NO_COLOR", "1")
            .envs(vars)
            .current_dir(&cwd)
            .args(&args)
            .timeout(std::time::Duration::from_secs(120));
        cmd.output().unwrap()
    })
    .await
    .unwrap()
}

/// Runs `hermes args…` (see [`hermes_env`]).
pub async fn hermes(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    hermes_env(home, cwd, args, &[]).await
}

/// The process's stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The process's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A mock provider, a temporary home whose config.yaml points at it, and a working directory.
pub struct Env {
    pub mock: MockProvider,
    pub home: TempHome,
    pub cwd: tempfile::TempDir,
}

impl Env {
    /// An environment whose config.yaml only selects the mock model.
    pub async fn new() -> Env {
        Env::with_config("").await
    }

    /// Same, with `extra_config` YAML appended to config.yaml.
    pub async fn with_config(extra_config: &str) -> Env {
        let mock = MockProvider::start().await;
        let home = TempHome::new().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let config = format!(
            "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\n{extra_config}",
            mock.base_url()
        );
        std::fs::write(home.home().config_file(), config).unwrap();
        Env { mock, home, cwd }
    }

    /// Runs `hermes args…` here.
    pub async fn run(&self, args: &[&str]) -> Output {
        hermes(self.home.path(), self.cwd.path(), args).await
    }

    /// Runs `hermes args…` here with extra environment variables.
    pub async fn run_env(&self, args: &[&str], vars: &[(&str, String)]) -> Output {
        hermes_env(self.home.path(), self.cwd.path(), args, vars).await
    }

    /// Runs `hermes args…` here and fails the test unless it exits 0.
    pub async fn run_ok(&self, args: &[&str]) -> Output {
        let out = self.run(args).await;
        assert!(
            out.status.success(),
            "hermes {args:?} failed: {}",
            stderr(&out)
        );
        out
    }
}
pub mod driver;
pub mod term;

/// `hermes args…` with a fresh pseudo-terminal as stdin, stdout and stderr (HERMES_HOME and
/// HOME from `env`, NO_COLOR, TERM=xterm, nothing else of the machine's environment but
/// PATH). Returns the child and the pty master the test plays the terminal on.
pub fn spawn_on_pty(env: &Env, args: &[&str]) -> (std::process::Child, std::fs::File) {
    use rustix::fs::{Mode, OFlags, open};
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    use std::process::{Command, Stdio};

    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let slave = open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap();
    let slave = std::fs::File::from(slave);
    let child = Command::new(env!("CARGO_BIN_EXE_hermes"))
        .env_clear()
        .env("HERMES_HOME", env.home.path())
        .env("HOME", env.home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .current_dir(env.cwd.path())
        .args(args)
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    (child, std::fs::File::from(master))
}

/// Runs `hermes args…` on an 80×24 color pty (TERM=xterm-256color, no NO_COLOR; HERMES_HOME
/// and HOME = `home`, only PATH from the machine) until it exits; returns everything it wrote
/// and the exit code. Panics after 90 s (a hang bound, not a timing assertion).
pub fn run_on_color_pty(home: &Path, cwd: &Path, args: &[&str]) -> (Vec<u8>, i32) {
    use expectrl::Session;
    use expectrl::process::unix::WaitStatus;
    use std::time::{Duration, Instant};

    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hermes"));
    cmd.env_clear()
        .env("HERMES_HOME", home)
        .env("HOME", home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm-256color")
        .current_dir(cwd)
        .args(args);
    let mut session = Session::spawn(cmd).unwrap();
    session.get_process_mut().set_window_size(80, 24).unwrap();
    let mut seen = Vec::new();
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        if let Ok(n) = session.try_read(&mut buf)
            && n > 0
        {
            seen.extend_from_slice(&buf[..n]);
            continue;
        }
        if let Ok(WaitStatus::Exited(_, code)) = session.get_process().status() {
            // Drain what is left after the exit.
            while let Ok(n) = session.try_read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
            }
            return (seen, code);
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "hermes did not exit; output:\n{}",
            String::from_utf8_lossy(&seen)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
