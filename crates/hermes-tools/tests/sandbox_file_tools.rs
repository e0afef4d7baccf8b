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
    for p in [&w.ws, &w.hh, &w.home, &w.out] {
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
    let ok = call("write_file", json!({"path": "new.txt", "content": "x"}), &c).await;
    assert!(!ok.is_error, "{ok:?}");
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
