//! Every vector of vectors/dangerous_commands.json and vectors/tool_arg_coercion.json.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use hermes_tools::safety::{dangerous_reason, hardline_reason};
use hermes_tools::{CommandSafety, Registry, classify_command, coerce_args};
use serde_json::json;

#[test]
fn dangerous_commands_vectors() {
    let v = common::load_json("vectors/dangerous_commands.json");
    let cases = v["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let cmd = case["cmd"].as_str().unwrap();
        let dangerous = case["dangerous"].as_bool().unwrap();
        let hardline = case["hardline"].as_bool().unwrap();
        assert_eq!(
            dangerous_reason(cmd).is_some(),
            dangerous,
            "dangerous flag of {cmd:?}"
        );
        assert_eq!(
            hardline_reason(cmd).is_some(),
            hardline,
            "hardline flag of {cmd:?}"
        );
        let verdict = classify_command(cmd);
        match (hardline, dangerous) {
            (true, _) => assert!(matches!(verdict, CommandSafety::Blocked { .. }), "{cmd:?}"),
            (false, true) => assert!(
                matches!(verdict, CommandSafety::Dangerous { .. }),
                "{cmd:?}"
            ),
            (false, false) => assert_eq!(verdict, CommandSafety::Safe, "{cmd:?}"),
        }
    }
}

#[test]
fn tool_arg_coercion_vectors() {
    let v = common::load_json("vectors/tool_arg_coercion.json");
    // Every tool named by the vectors exists: the built-ins plus the real web tools.
    let mut registry = Registry::builtin();
    let web = hermes_tools::web::tools(&Default::default(), &Default::default()).unwrap();
    for tool in web {
        registry.register(tool).unwrap();
    }
    let cases = v["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let tool = case["tool"].as_str().unwrap();
        let schema = match registry.get(tool) {
            Some(t) => t.spec().parameters,
            None => panic!("no schema for {tool}"),
        };
        assert_eq!(
            coerce_args(&schema, case["in"].clone()),
            case["out"],
            "{tool} {}",
            case["in"]
        );
    }
}

#[test]
fn path_overlap_vectors() {
    use hermes_tools::Parallelism;
    use hermes_tools::plan::{BatchCall, SegmentKind, paths_overlap, plan_batch};
    use std::path::Path;

    let v = common::load_json("vectors/path_overlap.json");
    for case in v["cases"].as_array().unwrap() {
        let (a, b) = (case[0].as_str().unwrap(), case[1].as_str().unwrap());
        assert_eq!(
            paths_overlap(Path::new(a), Path::new(b)),
            case[2].as_bool().unwrap(),
            "{a} {b}"
        );
    }
    let registry = Registry::builtin();
    let lookup = |name: &str| match name {
        "clarify" => Some(Parallelism::Never),
        _ => registry.get(name).map(|t| t.parallelism()),
    };
    let dir = tempfile::tempdir().unwrap();
    let batches = v["batches"].as_array().unwrap();
    assert!(!batches.is_empty());
    for batch in batches {
        let args: Vec<serde_json::Value> = batch["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| match c[1].as_str() {
                Some(p) => json!({"path": p}),
                None => json!({}),
            })
            .collect();
        let calls: Vec<BatchCall<'_>> = batch["calls"]
            .as_array()
            .unwrap()
            .iter()
            .zip(&args)
            .map(|(c, a)| BatchCall {
                name: c[0].as_str().unwrap(),
                args: Some(a),
            })
            .collect();
        let got: Vec<serde_json::Value> = plan_batch(&calls, lookup, dir.path())
            .into_iter()
            .map(|s| {
                let kind = match s.kind {
                    SegmentKind::Parallel => "parallel",
                    SegmentKind::Sequential => "sequential",
                };
                json!([kind, s.calls])
            })
            .collect();
        assert_eq!(
            serde_json::Value::Array(got),
            batch["segments"],
            "{}",
            batch["calls"]
        );
    }
}

/// A program word that only the shell's expansion names cannot be analysed, so it asks
/// (the sandbox bounds it either way; found by the attack pass of stop 31).
#[test]
fn a_program_chosen_by_expansion_needs_approval() {
    for cmd in [
        "$(which rm) -rf d5",
        "x=rm; $x -rf d15",
        "sh -c \"$(printf 'rm -rf d19')\"",
        "`echo rm` -rf d",
        "${RM} -rf d",
    ] {
        assert!(
            matches!(classify_command(cmd), CommandSafety::Dangerous { .. }),
            "{cmd}: {:?}",
            classify_command(cmd)
        );
    }
    for cmd in ["echo $HOME", "ls \"$PWD\"", "cat $(ls *.txt)", "X=1 make"] {
        assert_eq!(classify_command(cmd), CommandSafety::Safe, "{cmd}");
    }
}
