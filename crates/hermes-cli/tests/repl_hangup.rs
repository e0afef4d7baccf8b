//! The REPL ends when its terminal goes away, instead of spinning on a dead tty (crossterm
//! issue #793): the pty master is closed while `hermes` waits at its prompt, and the process
//! must exit on its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Generous bound that only catches a process that never exits.
const EXIT_BOUND: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread")]
async fn repl_exits_when_its_terminal_hangs_up() {
    let env = common::Env::new().await;
    let (mut child, master) = common::spawn_on_pty(&env, &[]);

    // Play the terminal until the prompt is up: answer cursor-position queries, wait for
    // the banner and the prompt.
    let mut master = master;
    let master = tokio::task::spawn_blocking(move || {
        let mut seen = String::new();
        let mut buf = [0u8; 4096];
        // The banner comes first; reedline then asks for the cursor position when it draws
        // the prompt, so both together mean the REPL is waiting for input.
        while !(seen.contains("hermes 0") && seen.contains("\x1b[6n")) {
            let n = master.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "terminal closed before the prompt; output so far: {seen:?}"
            );
            let chunk = String::from_utf8_lossy(&buf[..n]).into_owned();
            for _ in 0..chunk.matches("\x1b[6n").count() {
                master.write_all(b"\x1b[1;1R").unwrap();
            }
            seen.push_str(&chunk);
        }
        master
    });
    let master = tokio::time::timeout(EXIT_BOUND, master)
        .await
        .expect("the REPL never showed its prompt")
        .unwrap();

    // The terminal goes away.
    drop(master);

    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > EXIT_BOUND {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let Some(status) = status else {
        child.kill().unwrap();
        panic!("hermes kept running after its terminal hung up");
    };
    assert!(
        !status.success(),
        "a hangup is not a clean exit: {status:?}"
    );
}
