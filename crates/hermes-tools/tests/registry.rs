//! Registry, toolset resolution and tool declarations.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use hermes_protocol::ToolSpec;
use hermes_tools::{
    Access, Parallelism, Registry, RegistryError, Tool, ToolContext, ToolOutput, ToolsetDef,
    ToolsetSelection,
};
use serde_json::{Value, json};

struct Fake {
    name: &'static str,
    toolset: &'static str,
    missing: Option<&'static str>,
}

#[async_trait::async_trait]
impl Tool for Fake {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: "fake".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn toolset(&self) -> &'static str {
        self.toolset
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    fn available(&self) -> Result<(), String> {
        self.missing.map_or(Ok(()), |m| Err(m.to_string()))
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolOutput {
        ToolOutput::ok(self.name)
    }
}

fn fake(name: &'static str, toolset: &'static str) -> Arc<dyn Tool> {
    Arc::new(Fake {
        name,
        toolset,
        missing: None,
    })
}

fn names(r: &Registry, enabled: &[&str], disabled: &[&str]) -> Vec<String> {
    r.select(&ToolsetSelection::new(
        enabled.iter().copied(),
        disabled.iter().copied(),
    ))
    .unwrap()
    .names()
}

#[test]
fn builtin_tools_toolsets_and_parallelism() {
    let r = Registry::builtin();
    assert_eq!(
        r.names(),
        vec![
            "read_file",
            "write_file",
            "patch",
            "search_files",
            "terminal",
            "process",
            "todo",
            "clarify"
        ]
    );
    let expect = [
        (
            "read_file",
            "file",
            Parallelism::PathScoped {
                arg: "path",
                access: Access::Read,
            },
        ),
        (
            "write_file",
            "file",
            Parallelism::PathScoped {
                arg: "path",
                access: Access::Write,
            },
        ),
        (
            "patch",
            "file",
            Parallelism::PathScoped {
                arg: "path",
                access: Access::Write,
            },
        ),
        ("search_files", "file", Parallelism::Safe),
        ("terminal", "terminal", Parallelism::Never),
        ("process", "terminal", Parallelism::Never),
        ("todo", "todo", Parallelism::Never),
        ("clarify", "clarify", Parallelism::Never),
    ];
    for (name, toolset, par) in expect {
        let t = r.get(name).unwrap();
        assert_eq!(t.toolset(), toolset, "{name}");
        assert_eq!(t.parallelism(), par, "{name}");
        let spec = t.spec();
        assert_eq!(spec.parameters["type"], "object");
        assert!(!spec.description.is_empty());
    }
    assert_eq!(r.specs().len(), 8);
    assert!(r.get("nope").is_none());
}

#[test]
fn presets_and_parsing() {
    let r = Registry::builtin();
    let all = vec![
        "read_file",
        "write_file",
        "patch",
        "search_files",
        "terminal",
        "process",
        "todo",
        "clarify",
    ];
    assert_eq!(r.select(&ToolsetSelection::default()).unwrap().names(), all);
    assert_eq!(names(&r, &["safe"], &[]), vec!["read_file", "search_files"]);
    assert_eq!(names(&r, &["terminal"], &[]), vec!["terminal", "process"]);
    // Order is registration order, not the order asked for; duplicates collapse.
    let sel = ToolsetSelection::parse("terminal, todo clarify file,terminal");
    assert_eq!(
        sel.enabled,
        vec!["terminal", "todo", "clarify", "file", "terminal"]
    );
    assert_eq!(r.select(&sel).unwrap().names(), all);
    assert!(ToolsetSelection::parse("").enabled.is_empty());
    assert!(
        r.select(&ToolsetSelection::parse(""))
            .unwrap()
            .names()
            .is_empty()
    );
}

#[test]
fn diamond_composition_is_deduplicated_and_cycles_end() {
    let mut r = Registry::new();
    r.register(fake("a", "base")).unwrap();
    r.register(fake("b", "left")).unwrap();
    r.register(fake("c", "right")).unwrap();
    r.define_toolset(ToolsetDef {
        name: "l",
        description: "",
        includes: &["base", "left"],
        tools: &[],
    })
    .unwrap();
    r.define_toolset(ToolsetDef {
        name: "r",
        description: "",
        includes: &["base", "right"],
        tools: &[],
    })
    .unwrap();
    r.define_toolset(ToolsetDef {
        name: "top",
        description: "",
        includes: &["l", "r", "top"],
        tools: &[],
    })
    .unwrap();
    let set = r
        .select(&ToolsetSelection::new(["top"], Vec::<String>::new()))
        .unwrap();
    assert_eq!(set.names(), vec!["a", "b", "c"]);
    assert_eq!(set.specs().len(), 3);
    assert!(matches!(
        r.define_toolset(ToolsetDef {
            name: "top",
            description: "",
            includes: &[],
            tools: &[]
        }),
        Err(RegistryError::DuplicateToolset(_))
    ));
}

#[test]
fn disabled_toolsets_subtract_last() {
    let r = Registry::builtin();
    // `safe` adds read_file, but disabling `file` removes it again.
    assert_eq!(
        names(&r, &["safe", "terminal"], &["file"]),
        vec!["terminal", "process"]
    );
    assert_eq!(
        names(&r, &["hermes-cli"], &["terminal"]),
        vec![
            "read_file",
            "write_file",
            "patch",
            "search_files",
            "todo",
            "clarify"
        ]
    );
    assert_eq!(
        names(&r, &["hermes-cli"], &["safe"]),
        vec![
            "write_file",
            "patch",
            "terminal",
            "process",
            "todo",
            "clarify"
        ]
    );
    let sel = ToolsetSelection::parse("hermes-cli")
        .with_disabled(["file", "terminal", "todo", "clarify"]);
    assert!(r.select(&sel).unwrap().names().is_empty());
}

#[test]
fn unknown_toolset_lists_known_names() {
    let r = Registry::builtin();
    let err = r.select(&ToolsetSelection::parse("file,webb")).unwrap_err();
    assert_eq!(err.name, "webb");
    assert_eq!(
        err.known,
        vec![
            "clarify",
            "declarative",
            "file",
            "hermes-cli",
            "hermes-local",
            "safe",
            "terminal",
            "todo"
        ]
    );
    let msg = err.to_string();
    assert!(
        msg.contains("unknown toolset `webb`")
            && msg.contains(
                "clarify, declarative, file, hermes-cli, hermes-local, safe, terminal, todo"
            ),
        "{msg}"
    );
    assert!(
        r.select(&ToolsetSelection::new(["file"], ["nope"]))
            .is_err()
    );
}

#[test]
fn unavailable_tools_are_left_out_with_reasons() {
    let mut r = Registry::new();
    r.register(fake("ok_tool", "web")).unwrap();
    r.register(Arc::new(Fake {
        name: "web_search",
        toolset: "web",
        missing: Some("no search backend configured"),
    }))
    .unwrap();
    let set = r.select(&ToolsetSelection::parse("web")).unwrap();
    assert_eq!(set.names(), vec!["ok_tool"]);
    assert_eq!(
        set.unavailable(),
        &[(
            "web_search".to_string(),
            "no search backend configured".to_string()
        )]
    );
    assert_eq!(r.specs().len(), 1);
    assert!(set.get("web_search").is_none());
}

#[test]
fn duplicates_rejected_and_close_names_suggested() {
    let mut r = Registry::builtin();
    assert_eq!(
        r.register(fake("patch", "x")),
        Err(RegistryError::Duplicate("patch".into()))
    );
    r.register(fake("mcp__fs__read", "mcp-fs")).unwrap();
    assert_eq!(r.names().last().unwrap(), "mcp__fs__read");
    assert_eq!(r.closest_names("read_files", 2)[0], "read_file");
    assert_eq!(r.closest_names("termnal", 3), vec!["terminal"]);
    assert_eq!(r.closest_names("search", 1), vec!["search_files"]);
    assert!(r.closest_names("qqqqqqqqqq", 3).is_empty());
    let set = r.select(&ToolsetSelection::parse("safe")).unwrap();
    assert_eq!(set.closest_names("read", 5), vec!["read_file"]);
}

#[test]
fn a_preset_may_include_toolsets_this_build_does_not_register() {
    // `hermes-cli` includes memory/skills/session_search, which hermes-context registers.
    let reg = Registry::builtin();
    let set = reg.select(&ToolsetSelection::default()).unwrap();
    assert!(set.names().contains(&"read_file".to_string()));
    // A name the user gives must still exist.
    assert!(reg.select(&ToolsetSelection::parse("memory")).is_err());
}
