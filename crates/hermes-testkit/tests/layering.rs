//! Architecture test (CONVENTIONS pattern 7): a hermes crate may depend only on hermes crates
//! in a lower layer of ARCHITECTURE.md §1; `hermes-testkit` only as a dev-dependency. Inside
//! the `hermes` binary (crates/hermes-cli/src), no two top-level modules (`commands`, `repl`,
//! `setup`, `assembly`, `views`, `config_edit`, `render`) may import each other in a cycle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Layer of each crate, bottom = 0 (ARCHITECTURE §1).
fn layer(name: &str) -> Option<u32> {
    Some(match name {
        // Metrics depend on no hermes crate; every layer records into them.
        "hermes-protocol" | "hermes-telemetry" => 0,
        "hermes-store" => 1,
        "hermes-llm" => 2,
        "hermes-tools" => 3,
        "hermes-context" => 4,
        // The MCP bridge implements the Tool trait and scans descriptions for injection.
        "hermes-mcp" => 5,
        "hermes-agent" => 6,
        "hermes-gateway" | "hermes-cron" => 7,
        // The binary hosts every entry point (`hermes cron …`, `hermes gateway run`).
        "hermes-cli" => 8,
        "hermes-testkit" => 100,
        _ => return None,
    })
}

#[test]
fn no_crate_depends_on_a_crate_above_it() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut checked = 0;
    let mut violations = Vec::new();
    for pkg in meta["packages"].as_array().unwrap() {
        let name = pkg["name"].as_str().unwrap();
        let Some(own) = layer(name) else {
            violations.push(format!(
                "{name}: crate not placed in a layer; add it to this test and ARCHITECTURE.md"
            ));
            continue;
        };
        for dep in pkg["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            let Some(theirs) = layer(dep_name) else {
                continue;
            };
            checked += 1;
            let dev = dep["kind"].as_str() == Some("dev");
            if dep_name == "hermes-testkit" {
                if !dev {
                    violations.push(format!(
                        "{name} depends on hermes-testkit outside dev-dependencies"
                    ));
                }
                continue;
            }
            if name == "hermes-testkit" {
                if dep_name != "hermes-protocol" {
                    violations.push(format!(
                        "hermes-testkit may only use hermes-protocol, not {dep_name}"
                    ));
                }
                continue;
            }
            // A dev-dependency of a crate on itself only turns on its test-support feature
            // for its own tests (hermes-gateway's `testing`); it adds no edge between crates.
            if dev && dep_name == name {
                continue;
            }
            // hermes-mcp sits beside the tools layer and bridges server tools into
            // hermes-tools' `Tool` trait (ARCHITECTURE §1), so it may use hermes-tools.
            if name == "hermes-mcp" && dep_name == "hermes-tools" {
                continue;
            }
            if theirs >= own {
                violations.push(format!(
                    "{name} (layer {own}) depends on {dep_name} (layer {theirs})"
                ));
            }
        }
    }
    assert!(
        checked >= 10,
        "too few hermes dependencies seen ({checked}); is cargo metadata working?"
    );
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
}

// ---- Top-level modules of the CLI crate: no import cycle (issue 20) ----

/// Edges between the CLI's top-level modules: `from → to → files` (paths relative to `src/`)
/// whose text names `to` through a `crate::` or `super::` path.
type ModuleGraph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Where a source file sits in the module tree: `main.rs` → `[]` (the crate root),
/// `repl/mod.rs` → `[repl]`, `repl/input.rs` → `[repl, input]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().unwrap_or_default();
    let stem = file.strip_suffix(".rs").unwrap_or(&file).to_string();
    if stem != "mod" && !(parts.is_empty() && stem == "main") {
        parts.push(stem);
    }
    parts
}

fn ident_at(text: &str) -> Option<&str> {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    (end > 0).then(|| &text[..end])
}

/// The crate-root names a file at `module` refers to: the first segment after `crate::`
/// (each item of a `crate::{a::X, b}` group), and after a `super::` chain that climbs to the
/// crate root. `$crate::` (macro bodies) is not a reference to another module.
fn root_refs(text: &str, module: &[String]) -> BTreeSet<String> {
    refs_under(text, module, &[])
}

/// The names directly under module `base` (`[]`: the crate root; `["commands"]`) that a file
/// at `module` (inside `base`) refers to: the first segment after `crate::<base>::` (each
/// item of a group), and after a `super::` chain that climbs to `base`.
fn refs_under(text: &str, module: &[String], base: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let prefix: String = std::iter::once("crate::".to_string())
        .chain(base.iter().map(|b| format!("{b}::")))
        .collect();
    let bytes = text.as_bytes();
    let preceded_by_ident = |at: usize| {
        at > 0 && {
            let c = bytes[at - 1];
            c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b':'
        }
    };
    for (at, _) in text.match_indices(prefix.as_str()) {
        if preceded_by_ident(at) {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Items at brace depth 0 of the group, each up to its first `::`.
            let mut depth = 0usize;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start && depth == 0 => {
                        item_start = false;
                        if let Some(name) = ident_at(&group[i..]) {
                            out.insert(name.to_string());
                        }
                    }
                    _ => {}
                }
            }
        } else if let Some(name) = ident_at(rest) {
            out.insert(name.to_string());
        }
    }
    for (at, _) in text.match_indices("super::") {
        if preceded_by_ident(at) {
            continue;
        }
        let mut rest = &text[at..];
        let mut climbs = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            climbs += 1;
            rest = r;
        }
        if climbs + base.len() == module.len()
            && let Some(name) = ident_at(rest)
        {
            out.insert(name.to_string());
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The import graph between the top-level modules of the crate whose sources are in `src`.
fn module_graph(src: &Path) -> ModuleGraph {
    module_graph_under(src, &[])
}

/// The import graph between the modules directly under `base` (`[]`: the crate's top-level
/// modules; `["commands"]`: the files and folders of `src/commands/`). A folder is one node
/// with all its files; `base`'s own `mod.rs` declares and dispatches them and is left out.
fn module_graph_under(src: &Path, base: &[&str]) -> ModuleGraph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let inside = |module: &[String]| {
        module.len() > base.len() && module.iter().zip(base).all(|(m, b)| m == b)
    };
    let tops: BTreeSet<String> = files
        .iter()
        .map(|f| module_path(f.strip_prefix(src).unwrap()))
        .filter(|m| inside(m))
        .map(|m| m[base.len()].clone())
        .collect();
    let mut graph = ModuleGraph::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        let module = module_path(rel);
        if !inside(&module) {
            continue; // outside `base`, or `base`'s own mod.rs (above all of its modules)
        }
        let from = &module[base.len()];
        let text = std::fs::read_to_string(file).unwrap();
        for to in refs_under(&text, &module, base) {
            if &to != from && tops.contains(&to) {
                graph
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    graph
}

/// A cycle of `graph` as the list of its nodes (first node repeated at the end), or `None`
/// when the graph is acyclic. Depth-first search with the nodes on the current path marked.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|n| n == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(cycle) = visit(node, graph, &mut done, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

fn edges(graph: &ModuleGraph) -> BTreeMap<String, BTreeSet<String>> {
    graph
        .iter()
        .map(|(from, to)| (from.clone(), to.keys().cloned().collect()))
        .collect()
}

#[test]
fn cli_top_level_modules_import_each_other_in_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hermes-cli/src");
    let graph = module_graph(&src);
    let simple = edges(&graph);
    // The scan must see the layout's known edges, or it would pass by seeing nothing.
    for (from, to) in [
        ("commands", "assembly"),
        ("repl", "assembly"),
        ("commands", "repl"),
    ] {
        assert!(
            simple.get(from).is_some_and(|t| t.contains(to)),
            "expected an import {from} → {to}; graph seen: {simple:?}"
        );
    }
    if let Some(cycle) = find_cycle(&simple) {
        let detail: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                let files: Vec<&str> = graph[&w[0]][&w[1]].iter().map(String::as_str).collect();
                format!("{} → {} (in {})", w[0], w[1], files.join(", "))
            })
            .collect();
        panic!(
            "import cycle between the CLI's top-level modules: {}\n{}\n\
             move what both sides need to the lower module (see main.rs for the layers)",
            cycle.join(" → "),
            detail.join("\n")
        );
    }
}

/// The files and folders inside `commands/` import each other in no cycle either (issue
/// 20): the parser (`args`) names every subcommand's type, so no subcommand may reach back
/// to the parser (the Python-command answers in `redirect` get the names as data).
#[test]
fn cli_command_modules_import_each_other_in_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hermes-cli/src");
    let graph = module_graph_under(&src, &["commands"]);
    let simple = edges(&graph);
    // The scan must see the known edges, or it would pass by seeing nothing.
    for (from, to) in [
        ("args", "gateway"),
        ("args", "tools"),
        ("gateway", "redirect"),
    ] {
        assert!(
            simple.get(from).is_some_and(|t| t.contains(to)),
            "expected an import {from} → {to}; graph seen: {simple:?}"
        );
    }
    if let Some(cycle) = find_cycle(&simple) {
        let detail: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                let files: Vec<&str> = graph[&w[0]][&w[1]].iter().map(String::as_str).collect();
                format!("{} → {} (in {})", w[0], w[1], files.join(", "))
            })
            .collect();
        panic!(
            "import cycle between the modules of commands/: {}\n{}",
            cycle.join(" → "),
            detail.join("\n")
        );
    }
}

#[test]
fn the_agent_assembly_imports_no_front_end() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hermes-cli/src");
    let simple = edges(&module_graph(&src));
    let front_ends = ["commands", "repl", "setup", "render"];
    let bad: Vec<&String> = simple
        .get("assembly")
        .into_iter()
        .flatten()
        .filter(|to| front_ends.contains(&to.as_str()))
        .collect();
    assert!(bad.is_empty(), "assembly imports {bad:?}");
}

fn graph_of(edges: &[(&str, &str)]) -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in edges {
        g.entry(a.to_string()).or_default().insert(b.to_string());
        g.entry(b.to_string()).or_default();
    }
    g
}

#[test]
fn cycle_finder_finds_a_ring_and_passes_a_layered_graph() {
    let ring = graph_of(&[
        ("args", "cron"),
        ("cron", "session"),
        ("session", "gateway"),
        ("gateway", "args"),
        ("repl", "session"),
    ]);
    let cycle = find_cycle(&ring).expect("the ring is a cycle");
    assert_eq!(cycle.first(), cycle.last());
    let members: BTreeSet<&str> = cycle.iter().map(String::as_str).collect();
    assert_eq!(
        members,
        BTreeSet::from(["args", "cron", "session", "gateway"])
    );
    assert!(find_cycle(&graph_of(&[("a", "b"), ("b", "a")])).is_some());
    let layered = graph_of(&[
        ("commands", "repl"),
        ("commands", "assembly"),
        ("repl", "assembly"),
        ("repl", "render"),
        ("commands", "render"),
        ("assembly", "config_edit"),
    ]);
    assert_eq!(find_cycle(&layered), None);
    assert_eq!(find_cycle(&BTreeMap::new()), None);
}

#[test]
fn import_scan_under_a_module_reads_its_paths_and_super_chains() {
    let text = "use crate::commands::{args::Cli, redirect};\n\
                let x = crate::commands::gateway::run();\n\
                let y = crate::repl::z();\n\
                use super::tools::ToolsCmd;\n\
                use super::super::assembly::App;";
    let module = ["commands".to_string(), "chat".to_string()];
    assert_eq!(
        refs_under(text, &module, &["commands"]),
        BTreeSet::from([
            "args".to_string(),
            "gateway".to_string(),
            "redirect".to_string(),
            "tools".to_string(),
        ])
    );
    // From a file one folder deeper, `super::super::` reaches `commands`.
    let deeper = [
        "commands".to_string(),
        "gateway".to_string(),
        "cron".to_string(),
    ];
    assert_eq!(
        refs_under("use super::super::args::Cli;", &deeper, &["commands"]),
        BTreeSet::from(["args".to_string()])
    );
}

#[test]
fn import_scan_reads_crate_groups_and_super_chains() {
    let text = "use crate::{a::X, b, c::{D, e::F}};\n\
                let x = crate::d::f();\n\
                macro_rules! m { () => { $crate::g::h() } }\n\
                use super::super::k::L;\n\
                use super::sibling;\n\
                let y = foo_crate::z;";
    let refs = root_refs(text, &["top".to_string(), "file".to_string()]);
    assert_eq!(
        refs,
        BTreeSet::from(["a", "b", "c", "d", "k"].map(String::from))
    );
    assert_eq!(
        module_path(Path::new("repl/input.rs")),
        ["repl", "input"].map(String::from)
    );
    assert_eq!(
        module_path(Path::new("repl/mod.rs")),
        ["repl"].map(String::from)
    );
    assert!(module_path(Path::new("main.rs")).is_empty());
    // A file-level `super::` from `top/mod.rs` reaches the root.
    assert_eq!(
        root_refs("use super::other::Y;", &["top".to_string()]),
        BTreeSet::from(["other".to_string()])
    );
}
