//! `/model` inside a REPL session (issue 3): on a pseudo-terminal, `/model NAME` switches the
//! following turns to another model of the same provider, an unknown provider is refused with
//! a clear message and the session goes on, and leaving the REPL prints the session's tokens
//! and cost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::process::Child;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use hermes_testkit::MockResponse;

/// Generous bound that only catches a REPL that never answers.
const BOUND: Duration = Duration::from_secs(60);

/// The REPL on a pty: everything it prints arrives on `output`; cursor-position queries are
/// answered by the reader thread.
struct PtyRepl {
    child: Child,
    input: std::fs::File,
    output: Receiver<String>,
    seen: String,
}

impl PtyRepl {
    fn start(env: &common::Env) -> PtyRepl {
        let (child, master) = common::spawn_on_pty(env, &[]);
        let input = master.try_clone().unwrap();
        let mut reader = master;
        let mut answer = input.try_clone().unwrap();
        let (tx, output) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = String::from_utf8_lossy(&buf[..n]).into_owned();
                for _ in 0..chunk.matches("\x1b[6n").count() {
                    let _ = answer.write_all(b"\x1b[1;1R");
                }
                if tx.send(chunk).is_err() {
                    break;
                }
            }
        });
        PtyRepl {
            child,
            input,
            output,
            seen: String::new(),
        }
    }

    /// Reads until `needle` appears in the output after the current position, and moves the
    /// position past it.
    fn expect(&mut self, needle: &str) {
        let started = Instant::now();
        loop {
            if let Some(i) = self.seen.find(needle) {
                self.seen.drain(..i + needle.len());
                return;
            }
            let left = BOUND.saturating_sub(started.elapsed());
            match self.output.recv_timeout(left) {
                Ok(chunk) => self.seen.push_str(&chunk),
                Err(_) => panic!("never saw {needle:?}; output so far: {:?}", self.seen),
            }
        }
    }

    fn line(&mut self, text: &str) {
        self.input.write_all(text.as_bytes()).unwrap();
        self.input.write_all(b"\r").unwrap();
    }
}

impl Drop for PtyRepl {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn model_switches_the_following_turns_and_bad_providers_are_refused() {
    let env = common::Env::new().await;
    env.mock.push(MockResponse::text("first answer"));
    env.mock.push(MockResponse::text("second answer"));
    let mut repl = tokio::task::block_in_place(|| {
        let mut repl = PtyRepl::start(&env);
        repl.expect("mock-model on custom");
        repl.line("hello");
        repl.expect("first answer");
        repl.line("/model nosuch other-model");
        repl.expect("/model: unknown provider `nosuch`; known providers:");
        repl.line("/model second-model");
        repl.expect("switched to model second-model on custom");
        repl.line("/model");
        repl.expect("model second-model on custom");
        repl.line("again");
        repl.expect("second answer");
        repl.line("/quit");
        repl.expect("cost unknown");
        repl
    });
    let started = Instant::now();
    while repl.child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < BOUND,
            "the REPL did not exit after /quit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let models: Vec<_> = env
        .mock
        .requests()
        .iter()
        .map(|r| r["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(models, ["mock-model", "second-model"]);
    // The second request carries the whole conversation: same session, new model.
    let last = &env.mock.requests()[1];
    assert_eq!(last["messages"].as_array().unwrap().len(), 4);
}
