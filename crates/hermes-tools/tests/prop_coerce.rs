//! Property tests of tool-argument coercion (issue 6 part 5; FEATURES §3,
//! vectors/tool_arg_coercion.json): no panic on any schema or value, coercion is idempotent,
//! values that already fit their schema are left alone, and the string forms models send
//! (`"10"`, `"true"`, `"[1,2]"`) come back as the typed values.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_tools::{Registry, coerce_args};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Arbitrary JSON values (any shape, strings that look like numbers, booleans and JSON).
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "\\PC{0,10}".prop_map(Value::from),
        prop_oneof![
            Just("10"),
            Just(" 10 "),
            Just("10.0"),
            Just("1e3"),
            Just("true"),
            Just("False"),
            Just("yes"),
            Just("0"),
            Just("null"),
            Just("NaN"),
            Just("inf"),
            Just("[1,\"2\",[3]]"),
            Just("[\"a\"]"),
            Just("{\"b\":\"false\",\"n\":\"4\"}"),
            Just("["),
            Just("{"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const TYPES: &[&str] = &[
    "integer", "number", "boolean", "string", "array", "object", "null",
];

/// Arbitrary schemas: a type or a type list, with `items` and `properties` below.
fn any_schema() -> impl Strategy<Value = Value> {
    let ty = prop_oneof![
        (0..TYPES.len()).prop_map(|i| json!(TYPES[i])),
        proptest::collection::vec(0..TYPES.len(), 0..3)
            .prop_map(|v| Value::Array(v.into_iter().map(|i| json!(TYPES[i])).collect())),
        Just(Value::Null),
    ];
    let leaf = ty.clone().prop_map(|t| {
        if t.is_null() {
            json!({})
        } else {
            json!({ "type": t })
        }
    });
    leaf.prop_recursive(3, 16, 3, move |inner| {
        (
            ty.clone(),
            proptest::option::of(inner.clone()),
            proptest::collection::btree_map("[a-z]{1,3}", inner, 0..3),
        )
            .prop_map(|(t, items, props)| {
                let mut s = Map::new();
                if !t.is_null() {
                    s.insert("type".into(), t);
                }
                if let Some(items) = items {
                    s.insert("items".into(), items);
                }
                if !props.is_empty() {
                    s.insert(
                        "properties".into(),
                        Value::Object(props.into_iter().collect()),
                    );
                }
                Value::Object(s)
            })
    })
}

/// A scalar type a property can have in [`typed_object`].
#[derive(Debug, Clone, Copy)]
enum Scalar {
    Integer,
    Number,
    Boolean,
    Str,
    IntList,
}

fn scalar() -> impl Strategy<Value = Scalar> {
    prop_oneof![
        Just(Scalar::Integer),
        Just(Scalar::Number),
        Just(Scalar::Boolean),
        Just(Scalar::Str),
        Just(Scalar::IntList),
    ]
}

/// A flat object schema, a value that fits it, and the value as a model might stringify it.
fn typed_object() -> impl Strategy<Value = (Value, Value, Value)> {
    proptest::collection::btree_map(
        "[a-z]{1,4}",
        (
            scalar(),
            any::<i64>(),
            -4000i32..4000,
            any::<bool>(),
            "[a-z ]{0,6}",
            proptest::collection::vec(-1000i64..1000, 0..4),
        ),
        0..6,
    )
    .prop_map(|fields| {
        let mut props = Map::new();
        let mut typed = Map::new();
        let mut stringly = Map::new();
        for (k, (kind, i, quarter, b, s, list)) in fields {
            let (schema, value, text) = match kind {
                Scalar::Integer => (json!({"type": "integer"}), json!(i), json!(i.to_string())),
                Scalar::Number => {
                    let f = f64::from(quarter) / 4.0 + 0.25;
                    (json!({"type": "number"}), json!(f), json!(f.to_string()))
                }
                Scalar::Boolean => (json!({"type": "boolean"}), json!(b), json!(b.to_string())),
                Scalar::Str => (json!({"type": "string"}), json!(s), json!(s)),
                Scalar::IntList => (
                    json!({"type": "array", "items": {"type": "integer"}}),
                    json!(list),
                    json!(serde_json::to_string(&list).unwrap()),
                ),
            };
            props.insert(k.clone(), schema);
            typed.insert(k.clone(), value);
            stringly.insert(k, text);
        }
        (
            json!({"type": "object", "properties": props}),
            Value::Object(typed),
            Value::Object(stringly),
        )
    })
}

fn builtin_schemas() -> Vec<(String, Value)> {
    Registry::builtin()
        .specs()
        .into_iter()
        .map(|s| (s.name, s.parameters))
        .collect()
}

/// Property cases: `n`, or 20 × `n` with `HERMES_LONG_TESTS=1` (README "Two commands").
fn cases(n: u32) -> u32 {
    match std::env::var("HERMES_LONG_TESTS") {
        Ok(v) if !v.is_empty() && v != "0" => n * 20,
        _ => n,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    /// Any schema, any value: no panic, and a second pass changes nothing.
    #[test]
    fn coercion_is_idempotent(schema in any_schema(), value in any_json()) {
        let once = coerce_args(&schema, value);
        let twice = coerce_args(&schema, once.clone());
        prop_assert_eq!(twice, once);
    }

    /// The schemas of the built-in tools with arbitrary argument objects: no panic, idempotent,
    /// and the argument keys are never renamed, added or removed.
    #[test]
    fn builtin_tool_schemas_keep_keys(which in any::<usize>(), value in any_json()) {
        let schemas = builtin_schemas();
        let (name, schema) = &schemas[which % schemas.len()];
        let once = coerce_args(schema, value.clone());
        prop_assert_eq!(coerce_args(schema, once.clone()), once.clone(), "{}", name);
        if let (Value::Object(before), Value::Object(after)) = (&value, &once) {
            let a: Vec<&String> = before.keys().collect();
            let b: Vec<&String> = after.keys().collect();
            prop_assert_eq!(a, b, "{}", name);
        }
    }

    /// A value that already fits is returned unchanged; its stringified form is coerced back
    /// to it.
    #[test]
    fn fitting_values_stay_and_strings_come_back((schema, typed, stringly) in typed_object()) {
        prop_assert_eq!(coerce_args(&schema, typed.clone()), typed.clone());
        prop_assert_eq!(coerce_args(&schema, stringly), typed);
    }
}
