//! Reading a YAML document that someone else may have written (a tool file of
//! `HERMES_HOME/tools`, seed 004 §3.2) without letting it exhaust memory: YAML aliases
//! (`*name`) repeat the anchored value wherever they appear, so a few kilobytes of nested
//! aliases ("billion laughs") expand into hundreds of millions of values. yaml_serde bounds
//! nesting depth and the number of alias jumps, but not the size of what they expand to.
//!
//! [`from_str_bounded`] first walks the document without keeping anything, counting every
//! value as the aliases expand it, and refuses it past `max_values`; only a document within
//! the budget is then read into a [`yaml_serde::Value`].

use std::cell::Cell;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Most values (scalars, mappings, sequences, aliases expanded) a tool file may hold: far
/// above what a 64 KiB file can spell out without aliases (about 32 000).
pub const MAX_TOOL_FILE_VALUES: usize = 100_000;

/// Largest tool file read (64 KiB); a larger one is refused unread.
pub const MAX_TOOL_FILE_BYTES: u64 = 64 * 1024;

/// Parses `text` as one YAML document holding at most `max_values` values once its aliases
/// are expanded.
///
/// # Errors
/// The document is not valid YAML, or it expands to more than `max_values` values (the
/// error has the position where the budget ran out).
pub fn from_str_bounded(
    text: &str,
    max_values: usize,
) -> Result<yaml_serde::Value, yaml_serde::Error> {
    let left = Cell::new(max_values);
    Count {
        left: &left,
        max: max_values,
    }
    .deserialize(yaml_serde::Deserializer::from_str(text))?;
    yaml_serde::from_str(text)
}

/// Counts one value and everything below it.
#[derive(Clone, Copy)]
struct Count<'a> {
    left: &'a Cell<usize>,
    max: usize,
}

impl Count<'_> {
    fn take<E: de::Error>(self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(n) => {
                self.left.set(n);
                Ok(())
            }
            None => Err(E::custom(format_args!(
                "the document holds more than {} values once its aliases (`*name`) are expanded",
                self.max
            ))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: de::Error>(self, _v: bool) -> Result<(), E> {
        self.take()
    }
    fn visit_i64<E: de::Error>(self, _v: i64) -> Result<(), E> {
        self.take()
    }
    fn visit_u64<E: de::Error>(self, _v: u64) -> Result<(), E> {
        self.take()
    }
    fn visit_f64<E: de::Error>(self, _v: f64) -> Result<(), E> {
        self.take()
    }
    fn visit_str<E: de::Error>(self, _v: &str) -> Result<(), E> {
        self.take()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged value (`!tag x`): the tag and its value.
        let ((), variant) = data.variant_seed(self)?;
        de::VariantAccess::newtype_variant_seed(variant, self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn plain_documents_and_modest_aliases_parse() {
        let text = "a: &x {type: string}\nb: *x\nc: [1, 2, !t 3]\n";
        assert_eq!(
            from_str_bounded(text, 100).unwrap(),
            yaml_serde::from_str::<yaml_serde::Value>(text).unwrap()
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_at_its_budget() {
        let leaf = vec!["x"; 100].join(",");
        let aliases = vec!["*a"; 100].join(",");
        let text = format!("a: &a [{leaf}]\nb: [{aliases}]\n");
        let e = from_str_bounded(&text, 5_000).unwrap_err();
        assert!(e.to_string().contains("more than 5000 values"), "{e}");
        assert!(e.location().is_some());
        assert!(from_str_bounded(&text, 20_000).is_ok());
    }
}
