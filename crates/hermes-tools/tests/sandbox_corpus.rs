//! The bypass corpus of issue 18 ("How it is checked"): real commands, run through the
//! `terminal` tool and the real sandbox launcher, against canary files outside the workspace
//! and in a temporary HERMES_HOME and user home. Every canary must survive unchanged and no
//! secret may be read, in every mode; the `unsupported` fallback is tested too.
//!
//! This test binary is its own launcher (`harness = false`): run with `__sandbox-exec` it
//! restricts itself and execs the command, exactly as `hermes __sandbox-exec` does.
//!
//! Nothing here aims at real system paths: canaries live under one temp directory; forms that
//! name `/` run with `rm`, `find`, `shred` replaced on PATH by loggers (the sandbox would
//! also stop them, but a sandbox failure must not damage the machine, and `/dev/shm` is
//! writable in `workspace-write`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hermes_protocol::HermesHome;
use hermes_protocol::config::{SandboxMode, UnsupportedPolicy};
use hermes_tools::sandbox::{
    FORCE_UNSUPPORTED_ENV, KernelSupport, LAUNCHER_ARG, LAUNCHER_FAILED, kernel_support,
    launcher_main,
};
use hermes_tools::terminal::tools;
use hermes_tools::{SandboxSettings, ToolContext, ToolOutput};
use serde_json::json;

const SECRET: &str = "sk-canary-SECRET-7f3a9c";

/// One throwaway world: workspace, temp dir, user home, HERMES_HOME, an outside folder.
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    tmp: PathBuf,
    home: PathBuf,
    hh: PathBuf,
    out: PathBuf,
    bin: PathBuf,
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let w = World {
            ws: root.join("ws"),
            tmp: root.join("tmp"),
            home: root.join("home"),
            hh: root.join("hermes-home"),
            out: root.join("outside"),
            bin: root.join("loggers"),
            root,
            _dir: dir,
        };
        for d in [&w.ws, &w.tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        write(&w.ws.join("notes.txt"), "workspace file\n");
        write(&w.out.join("canary.txt"), "outside canary\n");
        write(&w.out.join("dir/deep.txt"), "deep canary\n");
        write(
            &w.home.join(".ssh/authorized_keys"),
            "ssh-ed25519 AAAA user\n",
        );
        write(&w.home.join(".bashrc"), "# rc\n");
        write(&w.home.join(".profile"), "# profile\n");
        write(&w.home.join(".gitconfig"), "[user]\n\tname = u\n");
        write(&w.home.join(".aws/credentials"), "[default]\n");
        write(
            &w.home.join(".config/systemd/user/keep.service"),
            "[Unit]\n",
        );
        write(&w.home.join("projects/readme.md"), "home file\n");
        write(&w.hh.join(".env"), &format!("OPENAI_API_KEY={SECRET}\n"));
        write(
            &w.hh.join("auth.json"),
            &format!("{{\"token\":\"{SECRET}\"}}"),
        );
        write(
            &w.hh.join("mcp-tokens/srv.json"),
            &format!("{{\"t\":\"{SECRET}\"}}"),
        );
        // Copies of the secrets next to them (an editor's backup, a hand-made one).
        for backup in [".env.bak", ".env~", "auth.json.old"] {
            write(&w.hh.join(backup), &format!("OPENAI_API_KEY={SECRET}\n"));
        }
        write(&w.hh.join("config.yaml"), "model: m\n");
        // Hard links to the secrets made before the session, under other names: the same
        // inode, so the same protection.
        std::fs::hard_link(w.hh.join(".env"), w.hh.join("env-link")).unwrap();
        std::fs::create_dir_all(w.hh.join("profiles")).unwrap();
        std::fs::hard_link(w.hh.join("auth.json"), w.hh.join("profiles/auth-link")).unwrap();
        // Another profile of this home: its secrets are as unreadable as the session's own.
        write(
            &w.hh.join("profiles/w/.env"),
            &format!("ANTHROPIC_API_KEY={SECRET}\n"),
        );
        write(
            &w.hh.join("profiles/w/auth.json"),
            &format!("{{\"token\":\"{SECRET}\"}}"),
        );
        write(&w.hh.join("hooks/keep/HOOK.yaml"), "name: keep\n");
        write(&w.hh.join("cron/jobs.json"), "{\"jobs\":[]}\n");
        write(&w.hh.join("state.db"), "not really sqlite\n");
        write(&w.hh.join("pairing/x.json"), "{}\n");
        for name in ["rm", "find", "shred"] {
            let log = w.root.join("ws/loggers.log");
            write(
                &w.bin.join(name),
                &format!("#!/bin/sh\necho \"{name} $*\" >> '{}'\n", log.display()),
            );
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(w.bin.join(name), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        w
    }

    fn settings(&self, mode: SandboxMode, network: bool) -> SandboxSettings {
        SandboxSettings {
            mode,
            writable_paths: Vec::new(),
            network,
            unsupported: UnsupportedPolicy::Refuse,
            launcher: Some(std::env::current_exe().unwrap()),
            user_home: Some(self.home.clone()),
            temp_dir: self.tmp.clone(),
            ..SandboxSettings::default()
        }
    }

    fn ctx(&self, settings: SandboxSettings, cwd: &Path, hh: &Path) -> ToolContext {
        let mut ctx = ToolContext::for_tests(cwd, HermesHome::new(hh));
        ctx.yolo = true; // the approval prompt is a warning; the sandbox is the boundary
        ctx.terminal_timeout_s = 20;
        ctx.sandbox = Arc::new(settings);
        ctx
    }

    /// Content of every file outside the workspace and temp dir (the canaries).
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        for top in [&self.home, &self.hh, &self.out, &self.bin] {
            snap(top, &mut out);
        }
        out
    }

    /// The preamble of every corpus command: HOME and TMPDIR in the world, names for its
    /// folders.
    fn preamble(&self) -> String {
        format!(
            "export HOME='{}' TMPDIR='{}'; O='{}'; H='{}'; W='{}'\n",
            self.home.display(),
            self.tmp.display(),
            self.out.display(),
            self.hh.display(),
            self.ws.display()
        )
    }
}

fn snap(p: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return;
    };
    if meta.is_dir() {
        out.insert(p.to_path_buf(), b"<dir>".to_vec());
        let mut entries: Vec<_> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for e in entries {
            snap(&e, out);
        }
    } else if meta.file_type().is_symlink() {
        out.insert(
            p.to_path_buf(),
            std::fs::read_link(p)
                .unwrap()
                .into_os_string()
                .into_encoded_bytes(),
        );
    } else {
        out.insert(p.to_path_buf(), std::fs::read(p).unwrap());
    }
}

/// Every file under `p` whose content holds the secret (outside HERMES_HOME's own files).
fn leaked_files(p: &Path, skip: &Path) -> Vec<PathBuf> {
    let mut out = BTreeMap::new();
    snap(p, &mut out);
    out.into_iter()
        .filter(|(path, body)| {
            !path.starts_with(skip) && String::from_utf8_lossy(body).contains(SECRET)
        })
        .map(|(p, _)| p)
        .collect()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn run(ctx: &ToolContext, command: &str) -> ToolOutput {
    let terminal = tools().into_iter().next().unwrap();
    rt().block_on(terminal.call(json!({ "command": command }), ctx))
}

/// The corpus: (name, command). `$O` is the outside folder, `$H` HERMES_HOME, `$W` the
/// workspace, `~` the test's user home.
fn corpus(w: &World) -> Vec<(&'static str, String)> {
    let b64 = |s: &str| {
        // base64 by the shell itself, so the command is opaque to any pattern list
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s' \"{s}\" | base64 -w0"))
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let o = w.out.display().to_string();
    let h = w.hh.display().to_string();
    vec![
        // Rewrites the approval patterns cannot see.
        ("subst rm", "$(echo rm) -rf \"$O\"".into()),
        ("var rm", "R=rm; $R -rf \"$O\"/dir \"$H\"/hooks".into()),
        ("eval printf", "eval \"$(printf 'r%sm -rf %s' '' \"$O\")\"".into()),
        ("base64 bash", format!("echo {} | base64 -d | bash", b64(&format!("rm -rf {o} {h}/cron")))),
        ("perl", "perl -e 'system(\"rm -rf $ENV{O}\"); unlink(\"$ENV{H}/config.yaml\")'".into()),
        ("python rmtree", "O=\"$O\" H=\"$H\" python3 -c \"import os,shutil; shutil.rmtree(os.environ['O'], ignore_errors=True); shutil.rmtree(os.environ['H']+'/hooks', ignore_errors=True); open(os.path.expanduser('~/.bashrc'),'a').write('evil')\"".into()),
        ("bash evil.sh", "printf 'rm -rf \"%s\"\\necho evil >> ~/.profile\\n' \"$O\" > evil.sh; bash evil.sh".into()),
        // Paths that lead outside the workspace.
        ("symlink write", "ln -s \"$O\"/canary.txt l; echo pwned > l; ln -s ~/.ssh ss; echo k >> ss/authorized_keys".into()),
        ("hard link", "ln \"$O\"/canary.txt hl && echo pwned >> hl; ln ~/.bashrc rc && echo pwned >> rc".into()),
        ("proc root", "echo pwned > /proc/self/root\"$O\"/canary.txt; echo x > /proc/$$/root\"$H\"/config.yaml".into()),
        ("dotdot", "echo pwned > ../outside/canary.txt; echo pwned > ./../../$(basename \"$(dirname \"$W\")\")/outside/dir/deep.txt".into()),
        ("cd relative", "cd \"$O\" && rm -f canary.txt; cd .. && rm -rf outside; cd \"$H\" && : > config.yaml".into()),
        ("background", "( sleep 0.3; rm -rf \"$O\" ) & nohup sh -c 'echo pwned > \"$H\"/config.yaml' >/dev/null 2>&1 & setsid sh -c 'echo x >> ~/.bashrc' & sleep 1".into()),
        ("tee dd sed", "echo pwned | tee \"$O\"/canary.txt; dd if=/dev/zero of=\"$O\"/dir/deep.txt count=1; sed -i s/canary/pwned/ \"$O\"/canary.txt; truncate -s0 ~/.gitconfig; cp /dev/null \"$H\"/state.db".into()),
        ("mv out", "mv \"$O\"/canary.txt .; mv \"$H\"/config.yaml .; mv ~/.ssh ./ssh".into()),
        // Persistence.
        ("authorized_keys", "echo 'ssh-ed25519 EVIL attacker' >> ~/.ssh/authorized_keys; echo k > ~/.ssh/authorized_keys2".into()),
        ("hook", "mkdir -p \"$H\"/hooks/evil && printf 'name: evil\\nevents: [gateway:startup]\\ncommand: id\\n' > \"$H\"/hooks/evil/HOOK.yaml".into()),
        ("config", "echo 'mcp_servers: {x: {command: evil}}' >> \"$H\"/config.yaml; echo '{}' > \"$H\"/auth.json; echo '[]' > \"$H\"/cron/jobs.json; rm -f \"$H\"/state.db".into()),
        ("systemd", "mkdir -p ~/.config/systemd/user && echo '[Service]' > ~/.config/systemd/user/evil.service".into()),
        ("gitconfig", "git config --global alias.x '!evil'; echo evil >> ~/.zshrc; echo evil > ~/.netrc; echo x > ~/.aws/credentials".into()),
        // Secrets.
        ("cat secrets", "cat \"$H\"/.env \"$H\"/auth.json \"$H\"/mcp-tokens/srv.json".into()),
        ("copy secrets", "cp \"$H\"/.env leak1; ln \"$H\"/auth.json leak2; cat \"$H\"/mcp-tokens/* > leak3; tar cf leak4.tar -C \"$H\" . ; grep -r sk- \"$H\" > leak5".into()),
        ("secret via symlink and proc", "ln -s \"$H\"/.env e; cat e; cat /proc/self/root\"$H\"/.env; python3 -c \"print(open('$H/auth.json').read())\"".into()),
        ("other profile's secrets", "cat \"$H\"/profiles/w/.env; cat \"$H\"/profiles/w/auth.json; cp \"$H\"/profiles/w/.env leak6".into()),
        ("secret backups", "cat \"$H\"/.env.bak \"$H\"/.env~ \"$H\"/auth.json.old; cp \"$H\"/.env.bak leak7".into()),
        ("hard links made before", "cat \"$H\"/env-link \"$H\"/profiles/auth-link; cp \"$H\"/env-link leak8".into()),
        ("secret dir listing", "ls \"$H\"/mcp-tokens; cat \"$H\"/mcp-tokens/srv.json".into()),
        // Forms that name `/`: destructive binaries are loggers here.
        ("slash forms", format!("export PATH='{}':$PATH; $(echo rm) -rf /; R=rm; $R -rf /; D=/; rm -rf $D; echo / | xargs rm -rf; find / -maxdepth 0 -delete; cd / && rm -rf *; rm -rf /tmp/..", w.bin.display())),
    ]
}

fn check(name: &str, cond: bool, detail: &str, failures: &mut Vec<String>) {
    if cond {
        println!("  ok   {name}");
    } else {
        println!("  FAIL {name}: {detail}");
        failures.push(format!("{name}: {detail}"));
    }
}

/// Runs the corpus in `mode` and checks canaries and secrets.
fn corpus_holds(mode: SandboxMode, failures: &mut Vec<String>) {
    println!("corpus, mode {}", mode.as_str());
    let w = World::new();
    let before = w.snapshot();
    let ctx = w.ctx(w.settings(mode, true), &w.ws, &w.hh);
    let mut outputs = String::new();
    for (name, cmd) in corpus(&w) {
        let out = run(&ctx, &format!("{}{cmd}", w.preamble()));
        outputs.push_str(&out.content);
        let after = w.snapshot();
        let changed: Vec<_> = before
            .keys()
            .chain(after.keys())
            .filter(|k| before.get(*k) != after.get(*k))
            .collect();
        check(
            &format!("{name}: canaries unchanged"),
            changed.is_empty(),
            &format!("changed {changed:?}; output {}", out.content),
            failures,
        );
    }
    // Background processes had time to act (`background` sleeps 1 s; its child 0.3 s).
    std::thread::sleep(std::time::Duration::from_millis(500));
    check(
        "after background jobs: canaries unchanged",
        before == w.snapshot(),
        "a canary changed late",
        failures,
    );
    check(
        "no secret in any output",
        !outputs.contains(SECRET),
        "the secret appeared in a tool result",
        failures,
    );
    let leaks = leaked_files(&w.root, &w.hh);
    check(
        "no secret copied anywhere",
        leaks.is_empty(),
        &format!("{leaks:?}"),
        failures,
    );
    let log = std::fs::read_to_string(w.ws.join("loggers.log")).unwrap_or_default();
    check(
        "the `/` forms ran (reached the loggers)",
        mode == SandboxMode::ReadOnly || log.matches("rm ").count() >= 4,
        &format!("logger log: {log:?}"),
        failures,
    );
}

/// The sandbox is not just "deny everything": what each mode allows works.
fn allowed_work(failures: &mut Vec<String>) {
    println!("allowed work");
    let w = World::new();
    let ctx = w.ctx(w.settings(SandboxMode::WorkspaceWrite, true), &w.ws, &w.hh);
    let out = run(
        &ctx,
        &format!(
            "{}echo new > new.txt && mkdir -p a/b && mv new.txt a/b/ && echo more >> notes.txt \
             && echo t > \"$TMPDIR\"/t && ln a/b/new.txt a/hl && cat \"$H\"/config.yaml \
             && ls /usr/bin >/dev/null && python3 -c 'print(6*7)' && echo done",
            w.preamble()
        ),
    );
    check(
        "workspace-write: workspace and temp writable, system readable",
        !out.is_error && out.content.contains("42") && out.content.contains("done"),
        &out.content,
        failures,
    );
    let ro = w.ctx(w.settings(SandboxMode::ReadOnly, true), &w.ws, &w.hh);
    let out = run(&ro, "echo x > ro.txt");
    check(
        "read-only: no writes in the workspace",
        out.is_error && !w.ws.join("ro.txt").exists(),
        &out.content,
        failures,
    );
    let out = run(&ro, "cat notes.txt && echo hi > /dev/null && echo ok");
    check(
        "read-only: reads and /dev/null work",
        !out.is_error && out.content.contains("ok"),
        &out.content,
        failures,
    );
    let off = w.ctx(w.settings(SandboxMode::Off, true), &w.ws, &w.hh);
    let target = w.root.join("off-write.txt");
    let out = run(&off, &format!("echo x > '{}'", target.display()));
    check(
        "off: writes outside the workspace as before",
        !out.is_error && target.exists(),
        &out.content,
        failures,
    );
    // The same policy decides for the file tools and for commands.
    let policy = ctx.policy();
    for p in [
        w.ws.join("p1"),
        w.tmp.join("p2"),
        w.out.join("p3"),
        w.home.join("p4"),
        w.home.join(".bashrc"),
        w.hh.join("config.yaml"),
        w.hh.join("logs-new"),
        w.ws.join("../outside/p5"),
    ] {
        let allowed = policy.check_write(&p).is_ok();
        let out = run(&ctx, &format!("echo x >> '{}'", p.display()));
        check(
            &format!("policy and Landlock agree on {}", p.display()),
            allowed != out.is_error,
            &format!("policy allows: {allowed}; command: {}", out.content),
            failures,
        );
    }
}

/// HERMES_HOME inside the workspace, and the workspace = the user's home: the rule set is
/// enumerated around the protected paths.
fn protected_inside_workspace(failures: &mut Vec<String>) {
    println!("protected paths inside the workspace");
    let w = World::new();
    let hh = w.home.join(".hermes");
    write(&hh.join(".env"), &format!("K={SECRET}\n"));
    write(&hh.join("config.yaml"), "model: m\n");
    write(&hh.join("logs/agent.log"), "log\n");
    write(&hh.join("scripts/backup.sh"), "echo backup\n");
    write(&hh.join("cache/models.json"), "{}\n");
    // Folders on PATH and files other programs run later.
    write(&w.home.join(".local/bin/tool"), "#!/bin/sh\n");
    write(&w.home.join(".cargo/bin/cargo"), "#!/bin/sh\n");
    write(&w.home.join(".bash_aliases"), "alias ll='ls -l'\n");
    let ctx = w.ctx(w.settings(SandboxMode::WorkspaceWrite, true), &w.home, &hh);
    let before = w.snapshot();
    let out = run(
        &ctx,
        "echo evil >> ~/.bashrc; echo e >> .hermes/config.yaml; cat .hermes/.env; \
         rm -f .bashrc; mv .profile p; mkdir -p .ssh2 .config/systemd/user; \
         echo k >> .ssh/authorized_keys; echo x > .zshrc; \
         echo evil >> .hermes/scripts/backup.sh; echo x > .hermes/scripts/new.sh; \
         echo l >> .hermes/logs/agent.log; echo c > .hermes/cache/models.json; \
         echo evil >> .local/bin/tool; echo x > .local/bin/git; echo x > .cargo/bin/rustc; \
         echo evil >> .bash_aliases; true",
    );
    let changed: Vec<_> = before
        .iter()
        .filter(|(k, v)| w.snapshot().get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect();
    check(
        "home as workspace: protected files unchanged",
        changed.is_empty()
            && !w.home.join(".zshrc").exists()
            && !hh.join("scripts/new.sh").exists()
            && !w.home.join(".local/bin/git").exists()
            && !w.home.join(".cargo/bin/rustc").exists(),
        &format!("{changed:?}"),
        failures,
    );
    check(
        "home as workspace: secret not read",
        !out.content.contains(SECRET),
        &out.content,
        failures,
    );
    let out = run(
        &ctx,
        "echo more >> projects/readme.md && mkdir -p projects/new && echo n > projects/new/f \
         && echo ok",
    );
    check(
        "home as workspace: other files and folders stay writable",
        !out.is_error && out.content.contains("ok"),
        &out.content,
        failures,
    );
}

fn network(failures: &mut Vec<String>) {
    println!("network");
    let w = World::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            drop(s);
        }
    });
    let probe = format!(
        "python3 -c \"import socket\nfor fam, kind, addr in [(socket.AF_INET, socket.SOCK_STREAM, ('127.0.0.1', {port})), (socket.AF_INET, socket.SOCK_DGRAM, None), (socket.AF_INET6, socket.SOCK_STREAM, None), (socket.AF_UNIX, socket.SOCK_STREAM, None)]:\n  try:\n    s = socket.socket(fam, kind)\n    if addr: s.connect(addr)\n    print(fam.name, kind.name, 'open')\n  except OSError as e:\n    print(fam.name, kind.name, 'blocked', e.errno)\""
    );
    let off = w.ctx(w.settings(SandboxMode::WorkspaceWrite, false), &w.ws, &w.hh);
    let out = run(&off, &probe);
    check(
        "network: false blocks TCP, UDP, IPv6 and (by default) Unix sockets",
        out.content.contains("AF_INET SOCK_STREAM blocked")
            && out.content.contains("AF_INET SOCK_DGRAM blocked")
            && out.content.contains("AF_INET6 SOCK_STREAM blocked")
            && out.content.contains("AF_UNIX SOCK_STREAM blocked"),
        &out.content,
        failures,
    );
    let off_mode = w.ctx(w.settings(SandboxMode::Off, false), &w.ws, &w.hh);
    let out = run(&off_mode, &probe);
    check(
        "network: false holds in mode off too (Unix sockets are not sandboxed there)",
        out.content.contains("AF_INET SOCK_STREAM blocked")
            && out.content.contains("AF_UNIX SOCK_STREAM open"),
        &out.content,
        failures,
    );
    let on = w.ctx(w.settings(SandboxMode::WorkspaceWrite, true), &w.ws, &w.hh);
    let out = run(&on, &probe);
    check(
        "network: true leaves sockets usable",
        out.content.contains("AF_INET SOCK_STREAM open"),
        &out.content,
        failures,
    );
}

/// Run as root, a sandboxed command keeps only Docker's default capabilities (minus MKNOD,
/// NET_RAW, SETFCAP) in every set, the bounding set included; without root it has none. No
/// block device can be opened for reading (the disk under the file rules).
fn root_reach(failures: &mut Vec<String>) {
    println!("capabilities and devices");
    let w = World::new();
    let ctx = w.ctx(w.settings(SandboxMode::WorkspaceWrite, true), &w.ws, &w.hh);
    let out = run(
        &ctx,
        "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status",
    );
    // CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE
    // SYS_CHROOT AUDIT_WRITE
    let kept: u64 = [0, 1, 3, 4, 5, 6, 7, 8, 10, 18, 29]
        .iter()
        .fold(0, |m, b| m | (1u64 << b));
    let root = running_as_root();
    let sets: Vec<(String, u64)> = out
        .content
        .lines()
        .filter_map(|l| {
            let (name, hex) = l.split_once(':')?;
            Some((name.to_string(), u64::from_str_radix(hex.trim(), 16).ok()?))
        })
        .collect();
    check(
        "the capability sets were read",
        sets.len() == 5,
        &out.content,
        failures,
    );
    for (name, value) in &sets {
        let ok = if root {
            value & !kept == 0
        } else {
            name == "CapBnd" || *value == 0
        };
        check(
            &format!("{name} holds only the kept capabilities"),
            ok,
            &format!("{name} = {value:#x}, kept {kept:#x}"),
            failures,
        );
    }
    let devices: Vec<PathBuf> = std::fs::read_dir("/dev")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    use std::os::unix::fs::FileTypeExt;
                    e.file_type().is_ok_and(|t| t.is_block_device())
                })
                .map(|e| e.path())
                // Only the ones this process can read unsandboxed (a loop device with
                // nothing attached reads nothing anyway).
                .filter(|p| {
                    use std::io::Read;
                    std::fs::File::open(p)
                        .is_ok_and(|mut f| f.read(&mut [0u8; 1]).is_ok_and(|n| n == 1))
                })
                .collect()
        })
        .unwrap_or_default();
    for dev in devices.iter().take(3) {
        let out = run(
            &ctx,
            &format!(
                "if head -c1 '{}' >/dev/null 2>&1; then echo READ; else echo DENIED; fi",
                dev.display()
            ),
        );
        check(
            &format!("{} cannot be read", dev.display()),
            out.content.contains("DENIED"),
            &out.content,
            failures,
        );
    }
}

/// True when this process's effective user is root (from `/proc/self/status`).
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// Unix-domain sockets reached by path (tmux, D-Bus, ssh-agent, docker): Landlock's file rules
/// do not cover `connect(2)` to one, so without `unix_sockets: true` a sandboxed command can
/// create none; socket pairs keep working.
fn unix_sockets(failures: &mut Vec<String>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    println!("unix sockets");
    let w = World::new();
    std::fs::create_dir_all(&w.out).unwrap();
    let path = w.out.join("server.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
    let probe = format!(
        "python3 -c \"import socket\ntry:\n  s = socket.socket(socket.AF_UNIX)\n  s.connect('{}')\n  print('unix connected')\nexcept OSError as e:\n  print('unix blocked', e.errno)\na, b = socket.socketpair()\na.send(b'x')\nprint('pair', b.recv(1).decode())\"",
        path.display()
    );
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        for network in [true, false] {
            let ctx = w.ctx(w.settings(mode, network), &w.ws, &w.hh);
            let out = run(&ctx, &probe);
            check(
                &format!(
                    "{}, network {network}: no Unix socket by path, socket pairs work",
                    mode.as_str()
                ),
                out.content.contains("unix blocked")
                    && out.content.contains("pair x")
                    && accepted.load(Ordering::SeqCst) == 0,
                &out.content,
                failures,
            );
        }
    }
    // The other ways to a Unix socket (attack pass of stop 32): io_uring's IORING_OP_SOCKET
    // and a datagram pair end re-aimed with sendto; and device nodes in the workspace.
    let other_ways = format!(
        "python3 -c \"import ctypes, socket, os\nlibc = ctypes.CDLL(None, use_errno=True)\nparams = ctypes.create_string_buffer(120)\nr = libc.syscall(425, 4, params)\nprint('uring', 'open' if r >= 0 else 'blocked', ctypes.get_errno())\ntry:\n  socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n  print('dgram pair open')\nexcept OSError as e:\n  print('dgram pair blocked', e.errno)\n\"; mknod blk b 7 0 2>/dev/null; mknod chr c 1 3 2>/dev/null; ls blk chr 2>&1 | head -2; : > '{}'",
        w.ws.join("ran.txt").display()
    );
    let ctx = w.ctx(w.settings(SandboxMode::WorkspaceWrite, true), &w.ws, &w.hh);
    let out = run(&ctx, &other_ways);
    check(
        "no io_uring, no datagram pairs, no device nodes",
        out.content.contains("uring blocked")
            && out.content.contains("dgram pair blocked")
            && !w.ws.join("blk").exists()
            && !w.ws.join("chr").exists()
            && w.ws.join("ran.txt").exists(),
        &out.content,
        failures,
    );
    let mut allowed = w.settings(SandboxMode::WorkspaceWrite, true);
    allowed.unix_sockets = true;
    let out = run(&w.ctx(allowed, &w.ws, &w.hh), &probe);
    check(
        "unix_sockets: true lets a command connect by path",
        out.content.contains("unix connected") && accepted.load(Ordering::SeqCst) == 1,
        &out.content,
        failures,
    );
    let out = run(
        &w.ctx(w.settings(SandboxMode::Off, true), &w.ws, &w.hh),
        &probe,
    );
    check(
        "mode off does not restrict Unix sockets",
        out.content.contains("unix connected"),
        &out.content,
        failures,
    );
}

fn background_process_tool(failures: &mut Vec<String>) {
    println!("process tool");
    let w = World::new();
    let ctx = w.ctx(w.settings(SandboxMode::WorkspaceWrite, true), &w.ws, &w.hh);
    let terminal = tools().into_iter().next().unwrap();
    let cmd = format!(
        "{}echo pwned > \"$O\"/canary.txt; cat \"$H\"/.env; echo started > bg.txt",
        w.preamble()
    );
    let out = rt().block_on(async {
        let out = terminal
            .call(json!({"command": cmd, "background": true}), &ctx)
            .await;
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        out
    });
    let canary = std::fs::read_to_string(w.out.join("canary.txt")).unwrap();
    check(
        "background processes run in the same sandbox",
        !out.is_error && canary == "outside canary\n" && w.ws.join("bg.txt").exists(),
        &format!("{} / canary {canary:?}", out.content),
        failures,
    );

    // A profile made while a background command runs: its secrets are as closed to that
    // command as those of the profiles it saw at its start (here the folder starts empty).
    let w = World::new();
    std::fs::remove_dir_all(w.hh.join("profiles")).unwrap();
    std::fs::create_dir_all(w.hh.join("profiles")).unwrap();
    let ctx = w.ctx(w.settings(SandboxMode::WorkspaceWrite, true), &w.ws, &w.hh);
    let cmd = format!(
        "{}sleep 1; cat \"$H\"/profiles/late/.env > late.txt 2>&1; echo done >> late.txt",
        w.preamble()
    );
    rt().block_on(async {
        terminal
            .call(json!({"command": cmd, "background": true}), &ctx)
            .await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        write(
            &w.hh.join("profiles/late/.env"),
            &format!("OPENAI_API_KEY={SECRET}\n"),
        );
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    });
    let late = std::fs::read_to_string(w.ws.join("late.txt")).unwrap_or_default();
    check(
        "a profile made after a background command started is closed to it",
        late.contains("done") && !late.contains(SECRET),
        &late,
        failures,
    );
}

/// Run in a child process with [`FORCE_UNSUPPORTED_ENV`] set: the fallback of
/// `terminal.sandbox.unsupported`.
fn unsupported_child(failures: &mut Vec<String>) {
    println!("unsupported kernel (forced)");
    let w = World::new();
    assert!(matches!(
        kernel_support(),
        KernelSupport::Unsupported { .. }
    ));
    let refuse = w.ctx(w.settings(SandboxMode::WorkspaceWrite, true), &w.ws, &w.hh);
    let target = w.ws.join("ran.txt");
    let out = run(&refuse, &format!("echo x > '{}'", target.display()));
    check(
        "unsupported + refuse: the command is not run",
        out.is_error && out.content.contains("refuse") && !target.exists(),
        &out.content,
        failures,
    );
    let mut warn = w.settings(SandboxMode::WorkspaceWrite, true);
    warn.unsupported = UnsupportedPolicy::Warn;
    let warn = w.ctx(warn, &w.ws, &w.hh);
    let out = run(&warn, &format!("echo x > '{}'", target.display()));
    check(
        "unsupported + warn: the command runs unsandboxed",
        !out.is_error && target.exists(),
        &out.content,
        failures,
    );
    // `network: false` still holds under the fallback (seccomp needs no Landlock).
    let mut warn_offline = w.settings(SandboxMode::WorkspaceWrite, false);
    warn_offline.unsupported = UnsupportedPolicy::Warn;
    let warn_offline = w.ctx(warn_offline, &w.ws, &w.hh);
    let out = run(
        &warn_offline,
        &format!(
            "python3 -c \"import socket\ntry:\n  socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n  print('inet open')\nexcept OSError:\n  print('inet blocked')\"; echo y > '{}'",
            w.ws.join("ran2.txt").display()
        ),
    );
    check(
        "unsupported + warn + network: false: the command runs, sockets are blocked",
        out.content.contains("inet blocked") && w.ws.join("ran2.txt").exists(),
        &out.content,
        failures,
    );
    // The file tools keep the protected locations whatever the kernel.
    let policy = warn.policy();
    check(
        "unsupported: file tools still refuse protected paths",
        policy.check_read(&w.hh.join(".env")).is_err()
            && policy.check_write(&w.home.join(".bashrc")).is_err(),
        "policy allowed a protected path",
        failures,
    );
}

fn main() {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == LAUNCHER_ARG) {
        let error = launcher_main(&args[2..]);
        eprintln!("hermes sandbox: {error}");
        std::process::exit(LAUNCHER_FAILED);
    }
    let mut failures = Vec::new();
    if args.get(1).is_some_and(|a| a == "--unsupported-child") {
        unsupported_child(&mut failures);
        std::process::exit(i32::from(!failures.is_empty()));
    }
    if std::env::var_os(FORCE_UNSUPPORTED_ENV).is_some() {
        println!("{FORCE_UNSUPPORTED_ENV} is set in the environment; unset it to run this test");
        std::process::exit(1);
    }
    match kernel_support() {
        KernelSupport::Available { abi } => println!("Landlock ABI {abi}+"),
        KernelSupport::Unsupported { reason } => {
            // CI's kernel has Landlock; a machine without it cannot run this test at all,
            // which CI (or anyone who sets HERMES_REQUIRE_SANDBOX) must not mistake for a pass.
            let required = ["CI", "HERMES_REQUIRE_SANDBOX"]
                .into_iter()
                .find(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
            if let Some(var) = required {
                println!("FAIL: the sandbox cannot be enforced here ({reason}) and {var} is set");
                std::process::exit(1);
            }
            println!("SKIP: the sandbox cannot be enforced here: {reason}");
            return;
        }
    }
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        corpus_holds(mode, &mut failures);
    }
    allowed_work(&mut failures);
    protected_inside_workspace(&mut failures);
    network(&mut failures);
    unix_sockets(&mut failures);
    root_reach(&mut failures);
    background_process_tool(&mut failures);
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--unsupported-child")
        .env(FORCE_UNSUPPORTED_ENV, "1")
        .status()
        .unwrap();
    if !child.success() {
        failures.push("the unsupported-kernel checks failed (see above)".into());
    }
    if failures.is_empty() {
        println!("sandbox corpus: all checks passed");
    } else {
        println!("\n{} check(s) failed:", failures.len());
        for f in &failures {
            println!("  {f}");
        }
        std::process::exit(1);
    }
}
