//! Input validation of every tool call against the tool's JSON Schema (seed 004 §3, "the
//! tool contract": `validate_input` before `execute`; issue 26 item 4).
//!
//! The agent first coerces the arguments ([`crate::coerce_args`], as Python Hermes does),
//! then checks the coerced copy here. A call that does not match gets ONE error result of one
//! shape for every kind of tool (built-in, MCP, declarative): each offending field named by
//! its JSON Pointer (RFC 6901, `/todos/0/status`; `/` is the arguments object itself) and what
//! was expected, at most [`MAX_PROBLEMS`] of them. Nothing is run.
//!
//! Validators are compiled once per tool ([`ToolValidators`], one lazily filled slot per tool
//! of an agent's list), never per call. A schema the validator cannot compile (an MCP server's
//! remote `$ref`, an unknown `$schema`) leaves that tool unvalidated rather than unusable: it
//! is logged once and the call runs on the coerced arguments, as before validation existed.
//! `format` is an annotation, not an assertion (the 2020-12 default), so a model is not refused
//! over a date-time spelling the tool itself accepts.

use std::sync::{Arc, OnceLock};

use hermes_protocol::ToolSpec;
use jsonschema::error::ValidationErrorKind;
use serde_json::{Map, Value};

use crate::tool::ToolOutput;

/// Most problems one error result lists (the rest are counted).
pub const MAX_PROBLEMS: usize = 8;

/// Most chars of a value quoted in a problem (longer values are cut with `…`).
const VALUE_PREVIEW_CHARS: usize = 60;

/// Most chars of a field's JSON Pointer shown in a problem: the keys in it come from the
/// arguments (or an answer), so a megabyte-long key is cut with `…`, not echoed back.
const POINTER_PREVIEW_CHARS: usize = 120;

/// Model-visible text of a refused call (`prompts/invalid_arguments.md`).
const INVALID_ARGUMENTS: &str = include_str!("../prompts/invalid_arguments.md");

/// One way an instance does not match its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// JSON Pointer of the offending field (`/offset`, `/todos/0/status`); `""` is the whole
    /// instance. For a missing required field it is the pointer the field would have.
    pub pointer: String,
    /// What was expected, in words (`the value is not of type "integer" (got string "ten")`).
    pub message: String,
}

impl std::fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pointer.is_empty() {
            return write!(f, "/: {}", self.message);
        }
        if self.pointer.chars().count() > POINTER_PREVIEW_CHARS {
            let cut: String = self
                .pointer
                .chars()
                .take(POINTER_PREVIEW_CHARS - 1)
                .collect();
            return write!(f, "{cut}…: {}", self.message);
        }
        write!(f, "{}: {}", self.pointer, self.message)
    }
}

/// A compiled JSON Schema.
pub struct SchemaValidator {
    inner: jsonschema::Validator,
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaValidator").finish_non_exhaustive()
    }
}

impl SchemaValidator {
    /// Compiles `schema` (its `$schema` picks the draft; 2020-12 without one). No remote or
    /// file references are fetched (jsonschema is built without its resolvers).
    ///
    /// # Errors
    /// The schema is not valid JSON Schema or cannot be compiled (message of the validator).
    pub fn compile(schema: &Value) -> Result<SchemaValidator, String> {
        jsonschema::options()
            .should_validate_formats(false)
            .build(schema)
            .map(|inner| SchemaValidator { inner })
            .map_err(|e| e.to_string())
    }

    /// Every way `instance` does not match, first [`MAX_PROBLEMS`] only; empty when it matches.
    pub fn problems(&self, instance: &Value) -> Vec<FieldProblem> {
        let mut out = Vec::new();
        for error in self.inner.iter_errors(instance) {
            describe(&error, &mut out);
            if out.len() >= MAX_PROBLEMS {
                out.truncate(MAX_PROBLEMS);
                break;
            }
        }
        out
    }

    /// True when `instance` matches.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.inner.is_valid(instance)
    }
}

/// Appends the problems of one validation error (an `additionalProperties` error names each
/// unexpected field on its own line).
fn describe(error: &jsonschema::ValidationError<'_>, out: &mut Vec<FieldProblem>) {
    let base = error.instance_path().as_str().to_string();
    let child = |name: &str| format!("{base}/{}", name.replace('~', "~0").replace('/', "~1"));
    match error.kind() {
        ValidationErrorKind::Required { property } => out.push(FieldProblem {
            pointer: child(property.as_str().unwrap_or_default()),
            message: "required, but missing".to_string(),
        }),
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            for name in unexpected {
                out.push(FieldProblem {
                    pointer: child(name),
                    message: "not a field of this tool (the schema allows no other fields)"
                        .to_string(),
                });
            }
        }
        ValidationErrorKind::Type { .. } => out.push(FieldProblem {
            pointer: base,
            message: format!(
                "{} (got {})",
                error.masked_with("the value"),
                preview(error.instance())
            ),
        }),
        _ => out.push(FieldProblem {
            pointer: base,
            message: error.masked_with("the value").to_string(),
        }),
    }
}

/// `string "abc"`, `integer 5`, `null`, `an object`… for a problem line.
fn preview(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) if n.is_i64() || n.is_u64() => format!("integer {n}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => {
            let quoted = Value::String(s.clone()).to_string();
            if quoted.chars().count() > VALUE_PREVIEW_CHARS {
                let cut: String = quoted.chars().take(VALUE_PREVIEW_CHARS - 1).collect();
                format!("string {cut}…")
            } else {
                format!("string {quoted}")
            }
        }
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(_) => "an object".to_string(),
    }
}

/// The error result of a call of `tool` whose arguments have `problems`
/// (`prompts/invalid_arguments.md`): one line per problem, the tool not run.
pub fn invalid_arguments(tool: &str, problems: &[FieldProblem]) -> ToolOutput {
    let lines: Vec<String> = problems.iter().map(|p| format!("- {p}")).collect();
    ToolOutput::error(
        INVALID_ARGUMENTS
            .trim()
            .replace("{tool}", tool)
            .replace("{problems}", &lines.join("\n")),
    )
}

/// `args` without the `null` values of properties the schema neither requires nor allows to
/// be null (models often send `"offset": null` for "not given"), at every level the schema's
/// `properties` describe. Every tool reads a missing optional field and a null one alike.
pub fn drop_optional_nulls(schema: &Value, args: Value) -> Value {
    let Value::Object(map) = args else {
        return args;
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Value::Object(map);
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        match props.get(&key) {
            Some(prop) if value.is_null() && !required.contains(&key.as_str()) => {
                if allows_null(prop) {
                    out.insert(key, value);
                }
            }
            Some(prop) => {
                let value = drop_optional_nulls(prop, value);
                out.insert(key, value);
            }
            None => {
                out.insert(key, value);
            }
        }
    }
    Value::Object(out)
}

/// True when `schema` says `null` is a value (`type: "null"`, a type list with it, or no type).
fn allows_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => true,
    }
}

/// The compiled input validators of one list of tools: slot `i` holds the validator of the
/// `i`-th spec, compiled on the first call of that tool and reused for every later call.
/// Build a new one whenever the list changes (the agent does so with its specs).
#[derive(Debug, Default)]
pub struct ToolValidators {
    slots: Vec<OnceLock<Option<Arc<SchemaValidator>>>>,
}

impl ToolValidators {
    /// Empty slots for `count` tools.
    pub fn new(count: usize) -> ToolValidators {
        ToolValidators {
            slots: (0..count).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The validator of tool `index` (`spec` is its spec), compiled on first use; `None`
    /// when its schema does not compile (logged once) or `index` is out of range.
    fn validator(&self, index: usize, spec: &ToolSpec) -> Option<Arc<SchemaValidator>> {
        self.slots
            .get(index)?
            .get_or_init(|| match SchemaValidator::compile(&spec.parameters) {
                Ok(v) => Some(Arc::new(v)),
                Err(e) => {
                    tracing::warn!(
                        tool = %spec.name,
                        error = %e,
                        "tool schema does not compile; its calls run without validation"
                    );
                    None
                }
            })
            .clone()
    }

    /// Checks the coerced arguments of a call of tool `index` (spec `spec`): optional nulls
    /// dropped ([`drop_optional_nulls`]), then validated against `spec.parameters`.
    ///
    /// # Errors
    /// The [`invalid_arguments`] result naming each offending field.
    pub fn check(&self, index: usize, spec: &ToolSpec, args: Value) -> Result<Value, ToolOutput> {
        let args = drop_optional_nulls(&spec.parameters, args);
        let Some(validator) = self.validator(index, spec) else {
            return Ok(args);
        };
        let problems = validator.problems(&args);
        if problems.is_empty() {
            Ok(args)
        } else {
            Err(invalid_arguments(&spec.name, &problems))
        }
    }
}

/// Coerces ([`crate::coerce_args`]) and validates `args` for a call of one tool outside an
/// agent (`hermes tools test`): the same steps and the same error result as a model's call.
///
/// # Errors
/// The [`invalid_arguments`] result.
pub fn prepare_args(spec: &ToolSpec, args: Value) -> Result<Value, ToolOutput> {
    let coerced = crate::coerce_args(&spec.parameters, args);
    ToolValidators::new(1).check(0, spec, coerced)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(parameters: Value) -> ToolSpec {
        ToolSpec {
            name: "demo".to_string(),
            description: String::new(),
            parameters,
        }
    }

    #[test]
    fn problems_name_the_field_and_the_expectation() {
        let s = spec(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1},
                "todos": {"type": "array", "items": {"type": "object", "properties": {
                    "status": {"enum": ["pending", "completed"]}
                }}}
            },
            "required": ["path"],
            "additionalProperties": false
        }));
        let v = ToolValidators::new(1);
        let err = v
            .check(
                0,
                &s,
                json!({"offset": "ten", "todos": [{"status": "done"}], "colour": 1}),
            )
            .unwrap_err();
        assert!(err.is_error);
        let text = err.content;
        assert!(text.contains("`demo`"), "{text}");
        assert!(text.contains("- /path: required, but missing"), "{text}");
        assert!(
            text.contains(r#"- /offset: the value is not of type "integer" (got string "ten")"#),
            "{text}"
        );
        assert!(text.contains("- /todos/0/status:"), "{text}");
        assert!(text.contains("- /colour: not a field"), "{text}");
        let ok = v
            .check(0, &s, json!({"path": "a", "offset": null}))
            .unwrap();
        assert_eq!(ok, json!({"path": "a"}), "an optional null is dropped");
        let err = v
            .check(0, &s, json!({"path": "a", "offset": 0}))
            .unwrap_err();
        assert!(
            err.content
                .contains("/offset: the value is less than the minimum of 1")
        );
    }

    #[test]
    fn a_schema_that_does_not_compile_leaves_calls_unvalidated() {
        let s = spec(
            json!({"type": "object", "properties": {"x": {"$ref": "https://example.invalid/s.json"}}}),
        );
        let v = ToolValidators::new(1);
        assert_eq!(v.check(0, &s, json!({"x": 1})).unwrap(), json!({"x": 1}));
    }

    #[test]
    fn prepare_args_coerces_before_it_validates() {
        let s = spec(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
        assert_eq!(
            prepare_args(&s, json!({"n": "3"})).unwrap(),
            json!({"n": 3})
        );
        assert!(prepare_args(&s, json!({"n": "three"})).is_err());
    }
}
