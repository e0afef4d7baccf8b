//! The memory files are locked as Python Hermes 0.19.0 locks them (`flock` on
//! `memories/MEMORY.md.lock`), so hermes and the real Python memory tool can add entries to
//! one file at the same time and none is lost. The interop part runs when
//! `HERMES_PYTHON_HERMES` points at the real Python program.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use hermes_context::memory::{MemoryOp, MemoryStore, MemoryTarget};

#[test]
fn the_lock_file_is_pythons() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memories");
    let s = MemoryStore::in_dir(&dir);
    for target in [MemoryTarget::Memory, MemoryTarget::User] {
        s.apply(
            target,
            &[MemoryOp::Add {
                content: "likes tea".into(),
            }],
        )
        .unwrap();
    }
    assert!(dir.join("MEMORY.md.lock").is_file());
    assert!(dir.join("USER.md.lock").is_file());
    assert!(!dir.join(".MEMORY.md.lock").exists());
}

/// A lock held by another process (flock, as Python takes it) makes a hermes update wait.
#[test]
fn a_held_python_style_flock_blocks_an_update() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memories");
    std::fs::create_dir_all(&dir).unwrap();
    let held = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("MEMORY.md.lock"))
        .unwrap();
    held.lock().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let d = dir.clone();
    let t = std::thread::spawn(move || {
        MemoryStore::in_dir(d)
            .apply(
                MemoryTarget::Memory,
                &[MemoryOp::Add {
                    content: "after the lock".into(),
                }],
            )
            .unwrap();
        tx.send(()).unwrap();
    });
    // While the lock is held the update cannot finish.
    assert!(
        rx.recv_timeout(std::time::Duration::from_millis(300))
            .is_err()
    );
    held.unlock().unwrap();
    rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
    t.join().unwrap();
    let text = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(text.contains("after the lock"));
}

#[test]
fn concurrent_adds_from_python_and_hermes_all_survive() {
    let Some(py) = std::env::var_os("HERMES_PYTHON_HERMES").map(PathBuf::from) else {
        eprintln!(
            "skipped: HERMES_PYTHON_HERMES is not set (scripts/python-hermes.sh installs the real Python Hermes 0.19.0)"
        );
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("memories");
    std::fs::create_dir_all(&dir).unwrap();
    const N: usize = 60;
    let script = format!(
        "from tools.memory_tool import MemoryStore\n\
         s = MemoryStore(memory_char_limit=1000000, user_char_limit=1000000)\n\
         for i in range({N}):\n\
         \x20   r = s.add('memory', 'python entry number %d' % i)\n\
         \x20   assert r.get('success'), r\n"
    );
    let mut child = Command::new(py.join("bin/python"))
        .args(["-c", &script])
        .env("HERMES_HOME", home.path())
        .current_dir(home.path())
        .spawn()
        .unwrap();
    let store = MemoryStore::in_dir(&dir).with_limits(1_000_000, 1_000_000);
    for i in 0..N {
        store
            .apply(
                MemoryTarget::Memory,
                &[MemoryOp::Add {
                    content: format!("hermes entry number {i}"),
                }],
            )
            .unwrap();
    }
    assert!(child.wait().unwrap().success());
    let entries = store.read(MemoryTarget::Memory).unwrap();
    for prefix in ["python", "hermes"] {
        for i in 0..N {
            let e = format!("{prefix} entry number {i}");
            assert!(entries.contains(&e), "{e} lost");
        }
    }
    assert_eq!(entries.len(), 2 * N);
}
