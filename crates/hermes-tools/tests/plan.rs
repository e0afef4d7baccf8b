//! The parallel planner beyond the vectors: canonical paths, unknown tools, bad arguments.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_tools::Registry;
use hermes_tools::plan::{BatchCall, Segment, SegmentKind, plan_batch};
use serde_json::{Value, json};

fn plan(calls: &[(&str, Option<Value>)], cwd: &std::path::Path) -> Vec<Segment> {
    let r = Registry::builtin();
    let batch: Vec<BatchCall<'_>> = calls
        .iter()
        .map(|(n, a)| BatchCall {
            name: n,
            args: a.as_ref(),
        })
        .collect();
    plan_batch(&batch, |n| r.get(n).map(|t| t.parallelism()), cwd)
}

fn seg(kind: SegmentKind, calls: &[usize]) -> Segment {
    Segment {
        kind,
        calls: calls.to_vec(),
    }
}

#[test]
fn writes_conflict_through_symlinks_and_parent_dirs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
    use SegmentKind::*;
    // Same file via a symlinked directory: conflict.
    let p = plan(
        &[
            ("read_file", Some(json!({"path": "real/a.txt"}))),
            ("write_file", Some(json!({"path": "link/a.txt"}))),
        ],
        dir.path(),
    );
    assert_eq!(p, vec![seg(Sequential, &[0, 1])]);
    // A write into a directory that another call reads: conflict; sibling files do not.
    let p = plan(
        &[
            ("search_files", Some(json!({"pattern": "x"}))),
            ("write_file", Some(json!({"path": "real/b.txt"}))),
            ("read_file", Some(json!({"path": "real/bc.txt"}))),
            ("patch", Some(json!({"path": "real"}))),
            ("read_file", Some(json!({"path": "other"}))),
            ("read_file", Some(json!({"path": "other2"}))),
        ],
        dir.path(),
    );
    assert_eq!(
        p,
        vec![seg(Sequential, &[0, 1, 2, 3]), seg(Parallel, &[4, 5])]
    );
}

#[test]
fn unknown_tools_bad_args_and_never_tools_run_alone() {
    let dir = tempfile::tempdir().unwrap();
    use SegmentKind::*;
    let p = plan(
        &[
            ("read_file", Some(json!({"path": "a"}))),
            ("read_file", Some(json!({"path": "b"}))),
            ("mystery", Some(json!({}))),
            ("read_file", None),
            ("read_file", Some(json!({"nopath": 1}))),
            ("terminal", Some(json!({"command": "ls"}))),
            ("search_files", Some(json!({"pattern": "x"}))),
            ("read_file", Some(json!({"path": "c"}))),
        ],
        dir.path(),
    );
    assert_eq!(
        p,
        vec![
            seg(Parallel, &[0, 1]),
            seg(Sequential, &[2]),
            seg(Sequential, &[3]),
            seg(Sequential, &[4]),
            seg(Sequential, &[5]),
            seg(Parallel, &[6, 7]),
        ]
    );
}
