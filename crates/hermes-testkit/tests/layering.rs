//! Architecture test (CONVENTIONS pattern 7): a hermes crate may depend only on hermes crates
//! in a lower layer of ARCHITECTURE.md §1; `hermes-testkit` only as a dev-dependency.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use serde_json::Value;

/// Layer of each crate, bottom = 0 (ARCHITECTURE §1).
fn layer(name: &str) -> Option<u32> {
    Some(match name {
        "hermes-protocol" => 0,
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
