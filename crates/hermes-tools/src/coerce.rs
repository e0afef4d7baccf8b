//! Argument coercion by JSON schema (FEATURES §3; vectors/tool_arg_coercion.json).
//!
//! Models often send `"10"` for an integer, `"true"` for a boolean, a JSON *string* holding an
//! array, or a bare string where a list is expected. The agent coerces the executed copy of the
//! arguments; the stored tool call keeps the model's text.

use serde_json::{Map, Number, Value};

/// Coerces `args` to the shapes `schema` asks for and returns the result.
///
/// Rules, applied recursively through `properties` and `items`:
/// - a string where the schema type is `integer` → integer (`"10"`, `" 10 "`, `"10.0"`);
/// - a string where it is `number` → number; a whole-valued float where it is `integer` → integer;
/// - a string where it is `boolean` → `true`/`false` (`"true"`, `"False"`, `"1"`, `"0"`, `"yes"`, `"no"`);
/// - a string where it is `array`: a JSON array text → that array, otherwise (items are strings
///   or unspecified) → a one-element array;
/// - a string holding a JSON object where it is `object` → that object.
///
/// Values that already fit, unknown properties and strings that do not parse are left as they
/// are (the tool reports the error). A type list (`["integer", "null"]`) allows each listed type;
/// a string is never coerced when `string` is one of them.
pub fn coerce_args(schema: &Value, args: Value) -> Value {
    coerce_value(schema, args)
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn coerce_value(schema: &Value, value: Value) -> Value {
    let types = types_of(schema);
    match value {
        Value::String(s) => coerce_string(schema, &types, s),
        Value::Number(n) if types.contains(&"integer") && !types.contains(&"number") => {
            match n.as_f64() {
                Some(f) if n.as_i64().is_none() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                    Value::Number(Number::from(f as i64))
                }
                _ => Value::Number(n),
            }
        }
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => Value::Array(
                items
                    .into_iter()
                    .map(|v| coerce_value(item_schema, v))
                    .collect(),
            ),
            None => Value::Array(items),
        },
        Value::Object(map) => Value::Object(coerce_object(schema, map)),
        other => other,
    }
}

fn coerce_object(schema: &Value, map: Map<String, Value>) -> Map<String, Value> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return map;
    };
    map.into_iter()
        .map(|(k, v)| {
            let v = match props.get(&k) {
                Some(prop) => coerce_value(prop, v),
                None => v,
            };
            (k, v)
        })
        .collect()
}

fn coerce_string(schema: &Value, types: &[&str], s: String) -> Value {
    if types.is_empty() || types.contains(&"string") {
        return Value::String(s);
    }
    let t = s.trim();
    if types.contains(&"integer") {
        if let Ok(i) = t.parse::<i64>() {
            return Value::Number(Number::from(i));
        }
        if let Ok(f) = t.parse::<f64>()
            && f.fract() == 0.0
            && f.abs() < 9.0e15
        {
            return Value::Number(Number::from(f as i64));
        }
    }
    if types.contains(&"number")
        && let Ok(f) = t.parse::<f64>()
        && let Some(n) = Number::from_f64(f)
    {
        return Value::Number(n);
    }
    if types.contains(&"boolean") {
        match t.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => return Value::Bool(true),
            "false" | "0" | "no" => return Value::Bool(false),
            _ => {}
        }
    }
    if types.contains(&"array") {
        if t.starts_with('[')
            && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(t)
        {
            return coerce_value(schema, Value::Array(items));
        }
        let item_types = schema.get("items").map(types_of).unwrap_or_default();
        if item_types.is_empty() || item_types.contains(&"string") {
            return Value::Array(vec![Value::String(s)]);
        }
        let item = coerce_value(
            schema.get("items").unwrap_or(&Value::Null),
            Value::String(s),
        );
        return Value::Array(vec![item]);
    }
    if types.contains(&"object")
        && t.starts_with('{')
        && let Ok(Value::Object(map)) = serde_json::from_str::<Value>(t)
    {
        return Value::Object(coerce_object(schema, map));
    }
    if types.contains(&"null") && t == "null" {
        return Value::Null;
    }
    Value::String(s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_and_type_lists() {
        let schema = json!({"type":"object","properties":{
            "n":{"type":["integer","null"]},
            "xs":{"type":"array","items":{"type":"integer"}},
            "s":{"type":"string"},
            "o":{"type":"object","properties":{"b":{"type":"boolean"}}}
        }});
        let out = coerce_args(
            &schema,
            json!({"n":"3","xs":"[\"1\",2]","s":"5","o":"{\"b\":\"false\"}","extra":"1"}),
        );
        assert_eq!(
            out,
            json!({"n":3,"xs":[1,2],"s":"5","o":{"b":false},"extra":"1"})
        );
        let out = coerce_args(&schema, json!({"n":"abc","xs":"7"}));
        assert_eq!(out, json!({"n":"abc","xs":[7]}));
    }
}
