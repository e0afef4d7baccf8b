//! Load-time checks of a declarative tool's `input_schema` / `output_schema` (issue 26 item
//! 4): valid JSON Schema of draft 2020-12 (the default) or draft 7 (checked against the
//! draft's meta-schema by the jsonschema crate, every violation reported), a schema the
//! validator can compile (regular expressions, local `$ref`s), and every `default` valid
//! under the schema it sits in — the seed's `timeout_ms` with `default: "1000"` for an
//! integer is refused (seed 004 §3.2).

use serde_json::Value;

use super::locate::Seg;
use crate::validate::SchemaValidator;

/// The `$schema` values accepted, without a trailing `#`: draft 2020-12 and draft 7.
const DRAFTS: &[&str] = &[
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft-07/schema",
];

/// Keywords whose value is one subschema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value maps names to subschemas.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is a list of subschemas.
const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// A problem: where (a path into the YAML file) and what.
pub(crate) type Found = (Vec<Seg>, String);

/// The path of a JSON Pointer into `root` (found under `base` in the file): numeric steps
/// into arrays become indices.
fn pointer_path(base: &[Seg], root: &Value, pointer: &str) -> Vec<Seg> {
    let mut path = base.to_vec();
    let mut cur = Some(root);
    for raw in pointer.split('/').skip(1) {
        let step = raw.replace("~1", "/").replace("~0", "~");
        match cur {
            Some(Value::Array(items)) => match step.parse::<usize>() {
                Ok(i) => {
                    cur = items.get(i);
                    path.push(Seg::Index(i));
                }
                Err(_) => {
                    cur = None;
                    path.push(Seg::Key(step));
                }
            },
            Some(Value::Object(map)) => {
                cur = map.get(&step);
                path.push(Seg::Key(step));
            }
            _ => {
                cur = None;
                path.push(Seg::Key(step));
            }
        }
    }
    path
}

/// Checks one schema found at `base` in the file; `arguments` is true for `input_schema`,
/// whose top level must be `type: object` (a tool's arguments are one JSON object).
pub(crate) fn check_schema(schema: &Value, base: &[Seg], arguments: bool, out: &mut Vec<Found>) {
    let Value::Object(map) = schema else {
        out.push((
            base.to_vec(),
            "must be a mapping holding a JSON Schema (`type: object`, `properties: …`)".to_string(),
        ));
        return;
    };
    if let Some(declared) = map.get("$schema") {
        let ok = declared
            .as_str()
            .map(|s| s.trim_end_matches('#'))
            .is_some_and(|s| DRAFTS.contains(&s));
        if !ok {
            let mut at = base.to_vec();
            at.push(Seg::key("$schema"));
            out.push((
                at,
                format!(
                    "`$schema` must be draft 2020-12 (`https://json-schema.org/draft/2020-12/schema`, \
                     the default) or draft 7 (`http://json-schema.org/draft-07/schema#`), not {declared}"
                ),
            ));
            return;
        }
    }
    let before = out.len();
    match jsonschema::meta::validator_for(schema) {
        Ok(meta) => {
            for e in meta.iter_errors(schema) {
                let pointer = e.instance_path().as_str().to_string();
                let path = pointer_path(base, schema, &pointer);
                let key = pointer.rsplit('/').next().unwrap_or_default();
                let message = if key == "type" {
                    format!(
                        "`type` must be one of array, boolean, integer, null, number, object, \
                         string (or a list of them), not {}",
                        e.instance()
                    )
                } else {
                    format!("not valid JSON Schema: {}", e.masked_with("the value"))
                };
                if !out[before..].iter().any(|(p, _)| *p == path) {
                    out.push((path, message));
                }
            }
        }
        Err(e) => out.push((base.to_vec(), format!("not valid JSON Schema: {e}"))),
    }
    if out.len() > before {
        return;
    }
    if let Err(e) = SchemaValidator::compile(schema) {
        out.push((base.to_vec(), format!("the schema cannot be used: {e}")));
        return;
    }
    if arguments && map.get("type").and_then(Value::as_str) != Some("object") {
        let mut at = base.to_vec();
        if map.contains_key("type") {
            at.push(Seg::key("type"));
        }
        out.push((
            at,
            "the arguments of a tool are one JSON object: `input_schema` needs `type: object`"
                .to_string(),
        ));
    }
    check_defaults(schema, base, out);
}

/// Every `default` below `schema` (at `path`) must be valid under the schema it sits in.
fn check_defaults(schema: &Value, path: &[Seg], out: &mut Vec<Found>) {
    let Value::Object(map) = schema else {
        return;
    };
    if let Some(default) = map.get("default") {
        let mut own = map.clone();
        own.remove("default");
        let mut at = path.to_vec();
        at.push(Seg::key("default"));
        match SchemaValidator::compile(&Value::Object(own)) {
            Ok(v) => {
                if let Some(p) = v.problems(default).first() {
                    out.push((
                        at,
                        format!("default {default} does not match its schema: {}", p.message),
                    ));
                }
            }
            // A subschema that only compiles inside its document (a local `$ref`): the
            // declared type is checked alone.
            Err(_) => {
                if let Some(message) = type_mismatch(map.get("type"), default) {
                    out.push((at, message));
                }
            }
        }
    }
    for (key, value) in map {
        let mut at = path.to_vec();
        at.push(Seg::key(key.clone()));
        if ONE_SCHEMA.contains(&key.as_str()) || (key == "items" && value.is_object()) {
            check_defaults(value, &at, out);
        } else if SCHEMA_MAPS.contains(&key.as_str())
            && let Value::Object(children) = value
        {
            for (name, child) in children {
                let mut at = at.clone();
                at.push(Seg::key(name.clone()));
                check_defaults(child, &at, out);
            }
        } else if (SCHEMA_LISTS.contains(&key.as_str()) || key == "items")
            && let Value::Array(children) = value
        {
            for (i, child) in children.iter().enumerate() {
                let mut at = at.clone();
                at.push(Seg::Index(i));
                check_defaults(child, &at, out);
            }
        }
    }
}

/// Why `value` is not of the declared `type` (one name or a list), if it is not.
fn type_mismatch(declared: Option<&Value>, value: &Value) -> Option<String> {
    let types: Vec<&str> = match declared? {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let fits = |t: &str| match t {
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => value.is_number(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    };
    if types.iter().any(|t| fits(t)) {
        return None;
    }
    Some(format!(
        "default {value} is not of type {}",
        types.join(" or ")
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(schema: Value, arguments: bool) -> Vec<Found> {
        let mut out = Vec::new();
        check_schema(&schema, &[Seg::key("input_schema")], arguments, &mut out);
        out
    }

    #[test]
    fn a_string_default_for_an_integer_is_refused() {
        let found = problems(
            json!({"type": "object", "properties": {
                "timeout_ms": {"type": "integer", "minimum": 100, "default": "1000"},
                "n": {"type": "integer", "default": 5, "maximum": 3}
            }}),
            true,
        );
        assert_eq!(found.len(), 2, "{found:?}");
        let at = |name: &str| {
            found
                .iter()
                .find(|(p, _)| {
                    *p == vec![
                        Seg::key("input_schema"),
                        Seg::key("properties"),
                        Seg::key(name),
                        Seg::key("default"),
                    ]
                })
                .map(|(_, m)| m.clone())
                .unwrap_or_else(|| panic!("{name}: {found:?}"))
        };
        assert!(at("timeout_ms").contains("\"1000\""), "{found:?}");
        assert!(at("n").contains("maximum of 3"), "{found:?}");
    }

    #[test]
    fn invalid_schemas_and_drafts_are_named_at_their_key() {
        let found = problems(
            json!({"type": "object", "properties": {"sku": {"type": "strin"}, "m": {"minLength": "5"}}}),
            true,
        );
        let paths: Vec<String> = found
            .iter()
            .map(|(p, _)| super::super::locate::display_path(p))
            .collect();
        assert!(
            paths.contains(&"input_schema.properties.sku.type".to_string()),
            "{found:?}"
        );
        assert!(
            paths.contains(&"input_schema.properties.m.minLength".to_string()),
            "{found:?}"
        );
        let found = problems(
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}),
            true,
        );
        assert!(found[0].1.contains("draft 2020-12"), "{found:?}");
        assert!(
            problems(
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
                true
            )
            .is_empty()
        );
        let found = problems(json!({"type": "array"}), true);
        assert!(found[0].1.contains("type: object"), "{found:?}");
        assert!(problems(json!({"type": "array"}), false).is_empty());
        let found = problems(
            json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "(["}}}),
            true,
        );
        assert_eq!(found.len(), 1, "{found:?}");
    }
}
