//! The file tools enforce the sandbox policy that the launcher enforces for commands
//! (issue 18 item 1: one policy, the same code).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use hermes_protocol::HermesHome;
use hermes_protocol::config::SandboxMode;
use hermes_tools::file::tools;
use hermes_tools::{SandboxSettings, ToolContext, ToolOutput};
use serde_json::{Value, json};

const SECRET: &str = "sk-file-tools-SECRET";

struct World {
    _d: tempfile::TempDir,
    ws: std::path::PathBuf,
    hh: std::path::PathBuf,
    home: std::path::PathBuf,
    out: std::path::PathBuf,
}

fn world() -> World {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().canonicalize().unwrap();
    let w = World {
        ws: r.join("ws"),
        hh: r.join("ws/.hermes-home"),
        home: r.join("home"),
        out: r.join("out"),
        _d: d,
    };
    for p in [&w.ws, &w.hh, &w.home, &w.out, &w.ws.join("src")] {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(w.hh.join(".env"), format!("KEY={SECRET}\n")).unwrap();
    std::fs::create_dir_all(w.hh.join("mcp-tokens")).unwrap();
    std::fs::write(w.hh.join("mcp-tokens/t.json"), SECRET).unwrap();
    std::fs::write(w.hh.join("config.yaml"), "model: m\n").unwrap();
    std::fs::write(w.ws.join("code.txt"), "hello sk-file\n").unwrap();
    std::fs::write(w.home.join(".bashrc"), "# rc\n").unwrap();
    std::os::unix::fs::symlink(w.hh.join(".env"), w.ws.join("env-link")).unwrap();
    w
}

fn ctx(w: &World, mode: SandboxMode) -> ToolContext {
    let mut c = ToolContext::for_tests(&w.ws, HermesHome::new(&w.hh));
    c.sandbox = Arc::new(SandboxSettings {
        mode,
        user_home: Some(w.home.clone()),
        temp_dir: w.ws.join("tmp"),
        ..SandboxSettings::default()
    });
    c
}

async fn call(name: &str, args: Value, ctx: &ToolContext) -> ToolOutput {
    let tool = tools().into_iter().find(|t| t.spec().name == name).unwrap();
    tool.call(args, ctx).await
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[tokio::test]
async fn read_file_refuses_secrets_even_through_a_symlink() {
    let w = world();
    let c = ctx(&w, SandboxMode::WorkspaceWrite);
    for p in [
        w.hh.join(".env"),
        w.ws.join("env-link"),
        w.hh.join("mcp-tokens/t.json"),
    ] {
        let out = call("read_file", json!({"path": path(&p)}), &c).await;
        assert!(out.is_error && !out.content.contains(SECRET), "{out:?}");
        assert!(out.content.contains("denied by the sandbox"), "{out:?}");
    }
    let out = call("read_file", json!({"path": "code.txt"}), &c).await;
    assert!(!out.is_error, "{out:?}");
}

#[tokio::test]
async fn write_and_patch_follow_the_mode() {
    let w = world();
    let c = ctx(&w, SandboxMode::WorkspaceWrite);
    let ok = call(
        "write_file",
        json!({"path": "src/new.txt", "content": "x"}),
        &c,
    )
    .await;
    assert!(!ok.is_error, "{ok:?}");
    // The workspace holds this HERMES_HOME, so (as for commands) no entry may be created
    // directly in it — a new file is refused by the kernel — while its existing files can
    // still be edited.
    let out = call("write_file", json!({"path": "new.txt", "content": "x"}), &c).await;
    assert!(
        out.is_error && out.content.contains("Permission denied"),
        "{out:?}"
    );
    let out = call(
        "patch",
        json!({"path": "code.txt", "old_string": "hello", "new_string": "bye"}),
        &c,
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("code.txt")).unwrap(),
        "bye sk-file\n"
    );
    for p in [
        w.out.join("x.txt"),
        w.home.join(".bashrc"),
        w.hh.join("config.yaml"),
        w.hh.join("hooks/evil/HOOK.yaml"),
    ] {
        let out = call(
            "write_file",
            json!({"path": path(&p), "content": "evil"}),
            &c,
        )
        .await;
        assert!(out.is_error, "{p:?}: {out:?}");
    }
    assert_eq!(
        std::fs::read_to_string(w.hh.join("config.yaml")).unwrap(),
        "model: m\n"
    );
    assert!(!w.out.join("x.txt").exists());
    let out = call(
        "patch",
        json!({"path": path(&w.hh.join("config.yaml")), "old_string": "m", "new_string": "evil"}),
        &c,
    )
    .await;
    assert!(out.is_error, "{out:?}");

    let ro = ctx(&w, SandboxMode::ReadOnly);
    let out = call("write_file", json!({"path": "ro.txt", "content": "x"}), &ro).await;
    assert!(out.is_error && out.content.contains("read-only"), "{out:?}");
    assert!(!w.ws.join("ro.txt").exists());

    let off = ctx(&w, SandboxMode::Off);
    let out = call(
        "write_file",
        json!({"path": path(&w.out.join("off.txt")), "content": "x"}),
        &off,
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    let out = call(
        "write_file",
        json!({"path": path(&w.home.join(".bashrc")), "content": "x"}),
        &off,
    )
    .await;
    assert!(out.is_error, "off still protects: {out:?}");
}

#[tokio::test]
async fn search_files_skips_secret_files_inside_the_tree() {
    let w = world();
    let c = ctx(&w, SandboxMode::WorkspaceWrite);
    let out = call(
        "search_files",
        json!({"pattern": "sk-", "hidden": true}),
        &c,
    )
    .await;
    assert!(!out.content.contains(SECRET), "{out:?}");
    assert!(out.content.contains("code.txt"), "{out:?}");
    let out = call(
        "search_files",
        json!({"pattern": "sk-", "path": path(&w.hh.join("mcp-tokens"))}),
        &c,
    )
    .await;
    assert!(out.is_error && !out.content.contains(SECRET), "{out:?}");
}

/// Swaps `dir` between a real folder and a symlink to `target` until `stop`, as a command
/// left running in the background can (`mv` in a loop).
fn swapper(
    dir: std::path::PathBuf,
    target: &Path,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let real = dir.with_extension("real");
    let link = dir.with_extension("link");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(target, &link).unwrap();
    std::thread::spawn(move || {
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = std::fs::rename(&dir, &real);
            let _ = std::fs::rename(&link, &dir);
            std::thread::yield_now();
            let _ = std::fs::rename(&dir, &link);
            let _ = std::fs::rename(&real, &dir);
        }
    })
}

/// A path check and the `open` after it are two steps: a background command swapping a
/// checked folder for a symlink in between used to let `write_file` write
/// `~/.ssh/authorized_keys` and `read_file` read `.env` (8 wins in 60 tries). The file tools
/// now do their I/O on a thread restricted by the commands' Landlock rules, so the kernel
/// refuses what the check would have.
#[tokio::test]
async fn a_folder_swapped_for_a_symlink_between_check_and_open_gains_nothing() {
    if !matches!(
        hermes_tools::sandbox::kernel_support(),
        hermes_tools::sandbox::KernelSupport::Available { .. }
    ) {
        eprintln!("SKIP: this kernel cannot enforce the sandbox");
        return;
    }
    let w = world();
    let c = ctx(&w, SandboxMode::WorkspaceWrite);
    std::fs::create_dir_all(w.home.join(".ssh")).unwrap();
    let keys = w.home.join(".ssh/authorized_keys");
    std::fs::write(&keys, "ssh-ed25519 AAAA user\n").unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let threads = [
        swapper(w.ws.join("d"), &w.home.join(".ssh"), stop.clone()),
        swapper(w.ws.join("e"), &w.hh, stop.clone()),
    ];
    // Attempts whose path check passed (the real folder was in place), so that only the
    // kernel stood between the write and the swapped-in symlink.
    let mut checked = 0;
    for i in 0..300 {
        let out = call(
            "write_file",
            json!({"path": path(&w.ws.join("d/authorized_keys")), "content": format!("evil {i}\n")}),
            &c,
        )
        .await;
        checked += usize::from(!out.content.contains("denied by the sandbox"));
        let out = call("read_file", json!({"path": path(&w.ws.join("e/.env"))}), &c).await;
        assert!(
            !out.content.contains(SECRET),
            "read through the swap: {out:?}"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&keys).unwrap(),
        "ssh-ed25519 AAAA user\n",
        "written through the swap"
    );
    assert!(checked > 0, "the race never got past the path check");
}
