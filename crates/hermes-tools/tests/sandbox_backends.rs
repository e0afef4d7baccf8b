//! `terminal.backend: docker | ssh | <other>` (issue 18 item 1): commands are built for the
//! docker and ssh clients with Python Hermes' settings. The ssh backend runs against a real
//! OpenSSH server on loopback; there is no docker daemon on the test machine, so a fake
//! `docker` (and, for the argument checks, a fake `ssh`) records its argv and runs the
//! command locally.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hermes_protocol::HermesHome;
use hermes_protocol::config::TerminalConfig;
use hermes_tools::sandbox::Backend;
use hermes_tools::sandbox::backend::{DockerBackend, SshBackend};
use hermes_tools::terminal::tools;
use hermes_tools::{SandboxSettings, ToolContext, ToolOutput};
use serde_json::{Value, json};

fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A fake docker: logs each call (args joined by `|`), answers `container inspect` from a
/// marker file that `run -d` creates, and runs `exec -w DIR NAME CMD…` / `run … IMAGE CMD…`
/// locally.
fn fake_docker(dir: &Path, image: &str) -> PathBuf {
    let p = dir.join("docker");
    let log = dir.join("docker.log");
    let marker = dir.join("running");
    script(
        &p,
        &format!(
            r#"#!/bin/bash
printf '%s|' "$@" >> '{log}'; echo >> '{log}'
case "$1" in
  container) [ -e '{marker}' ] && echo true; exit 0 ;;
  run)
    if [ "$2" = "-d" ]; then touch '{marker}'; echo cid; exit 0; fi
    while [ $# -gt 0 ] && [ "$1" != '{image}' ]; do shift; done; shift; exec "$@" ;;
  exec)
    if [ "$2" = "-w" ]; then shift 4; exec "$@"; fi; exit 0 ;;
esac
"#,
            log = log.display(),
            marker = marker.display(),
        ),
    );
    p
}

fn fake_ssh(dir: &Path) -> PathBuf {
    let p = dir.join("ssh");
    let log = dir.join("ssh.log");
    script(
        &p,
        &format!(
            "#!/bin/bash\nprintf '%s|' \"$@\" >> '{}'; echo >> '{}'\nfor last; do :; done\nexec sh -c \"$last\"\n",
            log.display(),
            log.display()
        ),
    );
    p
}

fn ctx(cwd: &Path, backend: Backend) -> ToolContext {
    let mut c = ToolContext::for_tests(cwd, HermesHome::new(cwd.join("hh")));
    c.sandbox = Arc::new(SandboxSettings {
        backend,
        ..SandboxSettings::off()
    });
    c
}

async fn run(ctx: &ToolContext, args: Value) -> ToolOutput {
    tools().into_iter().next().unwrap().call(args, ctx).await
}

fn docker_backend(dir: &Path, terminal: &TerminalConfig) -> DockerBackend {
    match Backend::from_config(terminal) {
        Backend::Docker(mut d) => {
            d.program = fake_docker(dir, &terminal.docker_image);
            *d
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn docker_persistent_container_is_started_once_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let terminal = TerminalConfig {
        backend: "docker".into(),
        docker_image: "alpine:3".into(),
        docker_network: false,
        docker_mount_cwd_to_workspace: true,
        docker_env: [("A".to_string(), "1".to_string())].into(),
        docker_volumes: vec!["/srv/data:/data:ro".into()],
        lifetime_seconds: 120,
        ..TerminalConfig::default()
    };
    let docker = docker_backend(d, &terminal);
    let name = docker.container.clone();
    let c = ctx(d, Backend::Docker(Box::new(docker)));
    let out = run(&c, json!({"command": "echo hello-from-container"})).await;
    assert!(
        !out.is_error && out.content.contains("hello-from-container"),
        "{out:?}"
    );
    let out = run(&c, json!({"command": "echo again", "workdir": "/data"})).await;
    assert!(!out.is_error && out.content.contains("again"), "{out:?}");
    let log = std::fs::read_to_string(d.join("docker.log")).unwrap();
    let starts: Vec<&str> = log.lines().filter(|l| l.starts_with("run|-d|")).collect();
    assert_eq!(starts.len(), 1, "{log}");
    let start = starts[0];
    for part in [
        format!("--name|{name}|"),
        "--label|hermes-agent=1|".into(),
        "--cap-drop|ALL|".into(),
        "--security-opt|no-new-privileges|".into(),
        "--pids-limit|256|".into(),
        "--cpus|1|".into(),
        "--memory|5120m|".into(),
        "--network=none|".into(),
        format!("-v|{}:/workspace|", d.display()),
        "-v|/srv/data:/data:ro|".into(),
        "-e|A=1|".into(),
        "|alpine:3|sh|-c|".into(),
        "-lt 120 ]".into(),
    ] {
        assert!(start.contains(&part), "missing {part} in {start}");
    }
    let execs: Vec<&str> = log.lines().filter(|l| l.starts_with("exec|-w|")).collect();
    assert_eq!(execs.len(), 2, "{log}");
    assert!(
        execs[0].starts_with(&format!("exec|-w|/workspace|{name}|bash|-c|")),
        "{log}"
    );
    assert!(
        execs[1].starts_with(&format!("exec|-w|/data|{name}|bash|-c|")),
        "{log}"
    );
}

#[tokio::test]
async fn docker_per_command_container_when_not_persistent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let terminal = TerminalConfig {
        backend: "docker".into(),
        container_persistent: false,
        docker_forward_env: vec!["TERM".into()],
        docker_extra_args: vec!["--read-only".into()],
        ..TerminalConfig::default()
    };
    let docker = docker_backend(d, &terminal);
    let c = ctx(d, Backend::Docker(Box::new(docker)));
    let out = run(&c, json!({"command": "echo once"})).await;
    assert!(!out.is_error && out.content.contains("once"), "{out:?}");
    let log = std::fs::read_to_string(d.join("docker.log")).unwrap();
    let line = log.lines().next().unwrap();
    assert!(line.starts_with("run|--rm|-i|--init|"), "{line}");
    for part in [
        "-e|TERM|",
        "--read-only|",
        "-w|/root|nikolaik/python-nodejs:python3.11-nodejs20|bash|-c|",
    ] {
        assert!(line.contains(part), "missing {part} in {line}");
    }
    assert!(!line.contains("--network=none"), "{line}");
}

#[tokio::test]
async fn ssh_backend_uses_python_options_and_quotes_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let terminal = TerminalConfig {
        backend: "SSH".into(),
        ssh_host: Some("build.example".into()),
        ssh_user: Some("dev".into()),
        ssh_port: Some(2222),
        ssh_key: Some("/keys/id".into()),
        ..TerminalConfig::default()
    };
    let Backend::Ssh(mut ssh) = Backend::from_config(&terminal) else {
        panic!("not ssh");
    };
    ssh.program = fake_ssh(d);
    ssh.control_dir = d.join("ctl");
    let c = ctx(d, Backend::Ssh(ssh.clone()));
    let remote_dir = d.join("remote dir");
    std::fs::create_dir(&remote_dir).unwrap();
    let out = run(
        &c,
        json!({"command": "echo \"it's $((6*7))\"; pwd", "workdir": remote_dir.display().to_string()}),
    )
    .await;
    assert!(out.content.contains("remote dir"), "{out:?}");
    assert!(!out.is_error && out.content.contains("it's 42"), "{out:?}");
    let log = std::fs::read_to_string(d.join("ssh.log")).unwrap();
    for part in [
        "-o|ControlMaster=auto|",
        "-o|ControlPersist=300|",
        "-o|BatchMode=yes|",
        "-o|StrictHostKeyChecking=accept-new|",
        "-o|ConnectTimeout=10|",
        "-p|2222|",
        "-i|/keys/id|",
        "dev@build.example|",
        &format!("cd '{}' && bash -c ", remote_dir.display()),
    ] {
        assert!(log.contains(part), "missing {part} in {log}");
    }
    assert!(log.contains(&format!("ControlPath={}/", d.join("ctl").display())));

    let no_host = SshBackend { host: None, ..ssh };
    let out = run(&ctx(d, Backend::Ssh(no_host)), json!({"command": "true"})).await;
    assert!(out.is_error && out.content.contains("ssh_host"), "{out:?}");
}

#[tokio::test]
async fn an_unknown_backend_refuses_naming_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let terminal = TerminalConfig {
        backend: "modal".into(),
        ..TerminalConfig::default()
    };
    let marker = dir.path().join("ran");
    let c = ctx(dir.path(), Backend::from_config(&terminal));
    let out = run(
        &c,
        json!({"command": format!("touch '{}'", marker.display())}),
    )
    .await;
    assert!(out.is_error && out.content.contains("`modal`"), "{out:?}");
    assert!(!marker.exists());
    let out = run(&c, json!({"command": "sleep 1", "background": true})).await;
    assert!(out.is_error && out.content.contains("`modal`"), "{out:?}");
}

/// Kills the server when the test ends, however it ends.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn keygen(path: &Path) {
    let ok = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success(), "ssh-keygen failed");
}

/// The `ssh` backend against a real OpenSSH server on loopback (`.ci/run` installs
/// `openssh-server`): a throwaway `sshd` with its own host key, accepting one generated key
/// for the current user, and the real `ssh` client (wrapped only to keep its known-hosts file
/// in the test folder instead of `~/.ssh`). The command runs on the server side in the
/// workdir, quoting survives, the exit code comes back, and the ControlMaster socket is reused.
#[tokio::test]
async fn ssh_backend_runs_commands_on_a_real_sshd() {
    let sshd = Path::new("/usr/sbin/sshd");
    // sshd run by root needs its privilege-separation folder (`.ci/run` creates it).
    if !sshd.exists()
        || std::process::Command::new("ssh")
            .arg("-V")
            .output()
            .is_err()
        || !Path::new("/run/sshd").is_dir()
    {
        eprintln!(
            "SKIP: no sshd, ssh client or /run/sshd on this machine (`.ci/run` installs \
             openssh-server and creates /run/sshd)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(&d.join("host_key"));
    keygen(&d.join("user_key"));
    std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
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
    let config = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nAuthorizedKeysFile {ak}\n\
         PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
         StrictModes no\nPermitRootLogin prohibit-password\nUsePAM no\nPidFile {pid}\n",
        hk = d.join("host_key").display(),
        ak = d.join("authorized_keys").display(),
        pid = d.join("sshd.pid").display(),
    );
    std::fs::write(d.join("sshd_config"), config).unwrap();
    let _server = Server(
        std::process::Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stderr(std::fs::File::create(d.join("sshd.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "sshd did not start: {}",
            std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let client = d.join("ssh");
    script(
        &client,
        &format!(
            "#!/bin/sh\nexec ssh -o UserKnownHostsFile={} \"$@\"\n",
            d.join("known_hosts").display()
        ),
    );
    let terminal = TerminalConfig {
        backend: "ssh".into(),
        ssh_host: Some("127.0.0.1".into()),
        ssh_user: Some(user),
        ssh_port: Some(port),
        ssh_key: Some(d.join("user_key")),
        ..TerminalConfig::default()
    };
    let Backend::Ssh(mut ssh) = Backend::from_config(&terminal) else {
        panic!("not ssh");
    };
    ssh.program = client;
    ssh.control_dir = d.join("ctl");
    let c = ctx(d, Backend::Ssh(ssh));
    let remote_dir = d.join("remote dir");
    std::fs::create_dir(&remote_dir).unwrap();
    let out = run(
        &c,
        json!({
            "command": "echo \"it's $((6*7))\" from $SSH_CONNECTION; pwd",
            "workdir": remote_dir.display().to_string()
        }),
    )
    .await;
    let log = || std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default();
    assert!(!out.is_error, "{out:?}\nsshd: {}", log());
    assert!(out.content.contains("it's 42 from 127.0.0.1"), "{out:?}");
    assert!(out.content.contains("remote dir"), "{out:?}");
    let out = run(&c, json!({"command": "exit 3"})).await;
    assert!(out.is_error && out.content.contains('3'), "{out:?}");
    let sockets = std::fs::read_dir(d.join("ctl")).unwrap().count();
    assert_eq!(sockets, 1, "one ControlMaster socket, reused");
}
