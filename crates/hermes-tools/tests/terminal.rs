//! The terminal and process tools: exit codes, caps, ANSI, timeout, cancel, approvals and
//! background processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_tools::terminal::{ProcessRegistry, ProcessStatus, tools_with};
use hermes_tools::{Approval, ApprovalRequest, Approver, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

struct Tools {
    terminal: Arc<dyn Tool>,
    process: Arc<dyn Tool>,
    registry: Arc<ProcessRegistry>,
}

fn tools() -> Tools {
    let registry = Arc::new(ProcessRegistry::new());
    let mut t = tools_with(registry.clone()).into_iter();
    Tools {
        terminal: t.next().unwrap(),
        process: t.next().unwrap(),
        registry,
    }
}

/// Calls with a bound that detects a hang.
async fn call(tool: &Arc<dyn Tool>, args: Value, ctx: &ToolContext) -> ToolOutput {
    tokio::time::timeout(Duration::from_secs(60), tool.call(args, ctx))
        .await
        .expect("tool call hung")
}

#[tokio::test]
async fn exit_code_output_ansi_and_workdir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let t = tools();
    let out = call(
        &t.terminal,
        json!({"command": "printf '\\033[31mred\\033[0m\\n'; echo err >&2"}),
        &ctx,
    )
    .await;
    assert!(!out.is_error);
    assert_eq!(out.content, "red\nerr\n[exit code: 0]");
    let out = call(
        &t.terminal,
        json!({"command": "pwd", "workdir": "sub"}),
        &ctx,
    )
    .await;
    assert!(
        out.content
            .starts_with(dir.path().join("sub").to_str().unwrap()),
        "{}",
        out.content
    );
    let out = call(&t.terminal, json!({"command": "exit 3"}), &ctx).await;
    assert!(out.is_error);
    assert_eq!(out.content, "(no output)\n[exit code: 3]");
    let out = call(
        &t.terminal,
        json!({"command": "ls", "workdir": "missing"}),
        &ctx,
    )
    .await;
    assert!(out.is_error && out.content.contains("does not exist"));
}

#[tokio::test]
async fn output_is_capped_keeping_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let t = tools();
    let out = call(&t.terminal, json!({"command": "seq 1 10000"}), &ctx).await;
    assert!(!out.is_error);
    assert!(out.content.starts_with("1\n2\n"));
    assert!(out.content.ends_with("10000\n[exit code: 0]"));
    assert!(out.content.contains("output truncated"));
    assert!(out.content.lines().count() <= 2_003);
    let out = call(
        &t.terminal,
        json!({"command": "head -c 200000 /dev/zero | tr '\\0' 'x'"}),
        &ctx,
    )
    .await;
    assert!(out.content.len() <= 50_000 + 300, "{}", out.content.len());
    assert!(out.content.contains("bytes omitted"));
}

#[tokio::test]
async fn timeout_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let t = tools();
    let out = call(
        &t.terminal,
        json!({"command": "echo started; sleep 300 & echo $!; wait", "timeout": 1}),
        &ctx,
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("started") && out.content.contains("timed out after 1 s"),
        "{}",
        out.content
    );
    let pid: u32 = out.content.lines().find_map(|l| l.parse().ok()).unwrap();
    // The group kill reaches the backgrounded child too.
    for _ in 0..50 {
        if !common::alive(pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!common::alive(pid), "child of a timed-out command survived");
}

#[tokio::test]
async fn cancellation_returns_promptly_with_a_cancelled_error() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let t = tools();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let out = call(&t.terminal, json!({"command": "sleep 120"}), &ctx).await;
    assert!(out.is_error);
    assert!(out.content.contains("cancelled"), "{}", out.content);
}

struct Recording(Mutex<Vec<ApprovalRequest>>, Approval);

#[async_trait::async_trait]
impl Approver for Recording {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        self.0.lock().unwrap().push(request.clone());
        self.1
    }
}

#[tokio::test]
async fn dangerous_commands_need_approval_and_hardline_is_always_blocked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("build")).unwrap();
    let t = tools();

    // Denied: not run, the model is told it was not approved.
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let out = call(&t.terminal, json!({"command": "rm -r build"}), &ctx).await;
    assert!(
        out.is_error && out.content.contains("not approved"),
        "{}",
        out.content
    );
    assert!(dir.path().join("build").exists());

    // Approved once: runs, and the approver saw the command and a reason.
    let approver = Arc::new(Recording(Mutex::new(Vec::new()), Approval::Once));
    let mut ctx = common::ctx(dir.path(), Approval::Deny);
    ctx.approver = approver.clone();
    let out = call(&t.terminal, json!({"command": "rm -r build"}), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(!dir.path().join("build").exists());
    let seen = approver.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].command, "rm -r build");
    assert!(seen[0].reason.contains("recursive delete"));

    // Safe commands never ask.
    let out = call(&t.terminal, json!({"command": "echo ok"}), &ctx).await;
    assert!(!out.is_error);
    assert_eq!(approver.0.lock().unwrap().len(), 1);

    // --yolo skips approval for dangerous commands but never for hard-line ones.
    let mut ctx = common::ctx(dir.path(), Approval::Deny);
    ctx.yolo = true;
    std::fs::create_dir(dir.path().join("build2")).unwrap();
    let out = call(&t.terminal, json!({"command": "rm -rf build2"}), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    let out = call(&t.terminal, json!({"command": "sudo  rm -fr /"}), &ctx).await;
    assert!(
        out.is_error && out.content.starts_with("Blocked"),
        "{}",
        out.content
    );
    let ctx = common::ctx(dir.path(), Approval::Once);
    let out = call(&t.terminal, json!({"command": "shutdown -h now"}), &ctx).await;
    assert!(out.is_error && out.content.starts_with("Blocked"));
}

#[tokio::test]
async fn session_approval_is_remembered_per_reason() {
    let dir = tempfile::tempdir().unwrap();
    let t = tools();
    let approver = Arc::new(Recording(Mutex::new(Vec::new()), Approval::Session));
    let mut ctx = common::ctx(dir.path(), Approval::Deny);
    ctx.approver = approver.clone();
    for name in ["a", "b"] {
        std::fs::create_dir(dir.path().join(name)).unwrap();
        let out = call(
            &t.terminal,
            json!({"command": format!("rm -r {name}")}),
            &ctx,
        )
        .await;
        assert!(!out.is_error);
    }
    assert_eq!(approver.0.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn background_processes_can_be_listed_polled_logged_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let t = tools();

    let out = call(
        &t.terminal,
        json!({"command": "echo hello; sleep 600", "background": true}),
        &ctx,
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("proc_1"), "{}", out.content);
    let out = call(
        &t.terminal,
        json!({"command": "echo bye; exit 4", "background": "true"}),
        &ctx,
    )
    .await;
    // Not coerced here (the agent coerces): a string is rejected with a clear message.
    assert!(out.is_error && out.content.contains("boolean"));
    let out = call(
        &t.terminal,
        json!({"command": "echo bye; exit 4", "background": true}),
        &ctx,
    )
    .await;
    assert!(out.content.contains("proc_2"));

    let done = t
        .registry
        .wait("proc_2", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(done.status, ProcessStatus::Exited(4));
    let out = call(&t.process, json!({"action": "poll", "id": "proc_2"}), &ctx).await;
    assert!(
        out.content.contains("exit code 4") && out.content.contains("bye"),
        "{}",
        out.content
    );

    // Output of the running one arrives eventually.
    let mut log = String::new();
    for _ in 0..100 {
        log = call(&t.process, json!({"action": "log", "id": "proc_1"}), &ctx)
            .await
            .content;
        if log.contains("hello") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(log, "hello");

    let out = call(&t.process, json!({"action": "list"}), &ctx).await;
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("proc_1") && lines[0].contains("running"));
    assert!(lines[1].starts_with("proc_2") && lines[1].contains("exited"));

    let pid = t.registry.get("proc_1").unwrap().pid.unwrap();
    assert!(common::alive(pid));
    let out = call(&t.process, json!({"action": "kill", "id": "proc_1"}), &ctx).await;
    assert!(
        !out.is_error && out.content.contains("killed"),
        "{}",
        out.content
    );
    assert_eq!(
        t.registry.get("proc_1").unwrap().status,
        ProcessStatus::Killed
    );
    assert!(!common::alive(pid));

    let out = call(&t.process, json!({"action": "poll", "id": "proc_9"}), &ctx).await;
    assert!(out.is_error && out.content.contains("proc_1, proc_2"));
    let out = call(&t.process, json!({"action": "explode"}), &ctx).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn dropping_the_registry_kills_background_processes() {
    let dir = tempfile::tempdir().unwrap();
    let registry = ProcessRegistry::new();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let info = registry.spawn("sleep 600", dir.path(), &ctx).unwrap();
    let pid = info.pid.unwrap();
    assert!(common::alive(pid));
    drop(registry);
    for _ in 0..100 {
        if !common::alive(pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!common::alive(pid));
}

/// The value of the secret-named variable the child test run gets in its environment.
const EXPORTED_KEY: &str = "sk-exported-in-shell-4d1e";

/// A key exported in the user's shell (not in `.env`) is not handed to commands. Variables
/// cannot be set in this process (no unsafe code), so the test runs itself again as a child
/// with `FOO_API_KEY` in its environment; the output goes through `rev` so that output
/// redaction could not hide a leak.
#[tokio::test]
async fn shell_exported_secret_variables_are_not_passed_to_commands() {
    const NAME: &str = "shell_exported_secret_variables_are_not_passed_to_commands";
    if std::env::var("FOO_API_KEY").as_deref() == Ok(EXPORTED_KEY) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = common::ctx(dir.path(), Approval::Deny);
        let t = tools();
        let out = call(
            &t.terminal,
            json!({"command": "printenv FOO_API_KEY | rev; printenv HERMES_PLAIN_VAR"}),
            &ctx,
        )
        .await;
        let reversed: String = EXPORTED_KEY.chars().rev().collect();
        assert!(!out.content.contains(&reversed), "{}", out.content);
        assert!(!out.content.contains(EXPORTED_KEY), "{}", out.content);
        // Other variables still pass.
        assert!(out.content.contains("plain-value"), "{}", out.content);
        println!("CHILD-CHECKED");
        return;
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env("FOO_API_KEY", EXPORTED_KEY)
        .env("HERMES_PLAIN_VAR", "plain-value")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && stdout.contains("CHILD-CHECKED"),
        "child run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
}
