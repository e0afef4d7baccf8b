//! Input validation of the built-in tools (seed 004 §3, issue 26 item 4): every built-in
//! schema compiles, a call missing its required fields is refused with one line per field,
//! a wrongly typed field is named with what was expected, and coerced arguments pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_tools::{Registry, SchemaValidator, ToolValidators, prepare_args};
use serde_json::{Value, json};

#[test]
fn every_builtin_schema_compiles_and_names_missing_required_fields() {
    let specs = Registry::builtin().specs();
    assert!(!specs.is_empty());
    let validators = ToolValidators::new(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        SchemaValidator::compile(&spec.parameters).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        let required: Vec<&str> = spec.parameters["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let result = validators.check(i, spec, json!({}));
        if required.is_empty() {
            assert!(result.is_ok(), "{}: {result:?}", spec.name);
            continue;
        }
        let refusal = result.unwrap_err();
        assert!(refusal.is_error);
        assert!(
            refusal.content.starts_with(&format!(
                "`{}` was not run: its arguments do not match its schema.",
                spec.name
            )),
            "{}",
            refusal.content
        );
        for field in required {
            assert!(
                refusal
                    .content
                    .contains(&format!("- /{field}: required, but missing")),
                "{}: {}",
                spec.name,
                refusal.content
            );
        }
    }
}

#[test]
fn wrong_types_are_named_and_coerced_values_pass() {
    let registry = Registry::builtin();
    let read = registry.get("read_file").unwrap().spec();
    let err = prepare_args(&read, json!({"path": ["a"], "limit": "many"})).unwrap_err();
    assert!(
        err.content
            .contains(r#"- /path: the value is not of type "string" (got an array of 1 items)"#),
        "{}",
        err.content
    );
    assert!(
        err.content
            .contains(r#"- /limit: the value is not of type "integer" (got string "many")"#),
        "{}",
        err.content
    );
    assert_eq!(
        prepare_args(
            &read,
            json!({"path": "a.txt", "limit": "20", "offset": null})
        )
        .unwrap(),
        json!({"path": "a.txt", "limit": 20})
    );
    let todo = registry.get("todo").unwrap().spec();
    let err = prepare_args(
        &todo,
        json!({"todos": [{"id": "1", "content": "x", "status": "someday"}]}),
    )
    .unwrap_err();
    assert!(
        err.content.contains("- /todos/0/status:"),
        "{}",
        err.content
    );
}

#[test]
fn a_huge_field_name_is_named_but_not_echoed_back() {
    // A strict schema, as MCP servers and tool files often have.
    let read = hermes_protocol::ToolSpec {
        name: "strict".into(),
        description: String::new(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
            "additionalProperties": false}),
    };
    let mut args = serde_json::Map::new();
    args.insert("path".into(), json!("a.txt"));
    for i in 0..10 {
        args.insert(format!("{i}{}", "k".repeat(100_000)), json!(1));
    }
    let err = prepare_args(&read, Value::Object(args)).unwrap_err();
    assert!(err.content.len() < 4_000, "{} bytes", err.content.len());
    assert!(
        err.content.contains("- /0kkkk") && err.content.contains("…: not a field"),
        "{}",
        &err.content[..err.content.len().min(600)]
    );
}
