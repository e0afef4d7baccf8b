//! Where a key or value of a YAML document is: the 1-based line and column of a path such as
//! `input_schema.properties.timeout_ms.default`, for `hermes tools check`'s `file:line:column`.
//!
//! yaml_serde keeps no positions in its values, but its errors carry the position of the
//! event being read when they were raised. [`locate`] reads the document once more with a
//! deserializer that walks down `path` (skipping everything else) and raises an error on the
//! key it is after — or on the value, for a sequence index — so the error's location is the
//! key's own. Works for block and flow style alike.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a path into a YAML document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A mapping key.
    Key(String),
    /// A sequence index (0-based).
    Index(usize),
}

impl Seg {
    /// A key step.
    pub fn key(name: impl Into<String>) -> Seg {
        Seg::Key(name.into())
    }
}

/// `a.b[2].c` for messages.
pub fn display_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The message of the error that marks the place found.
const HERE: &str = "\u{1}hermes-locate-here\u{1}";

/// The 1-based `(line, column)` of the last key of `path` in `text` (of the element, when
/// the last step is an index); `None` when the path is not in the document (or the document
/// does not parse). An empty path is the document's start, `(1, 1)`.
pub fn locate(text: &str, path: &[Seg]) -> Option<(usize, usize)> {
    if path.is_empty() {
        return Some((1, 1));
    }
    let de = yaml_serde::Deserializer::from_str(text);
    match Find(path).deserialize(de) {
        Err(e) if e.to_string().contains(HERE) => e.location().map(|l| (l.line(), l.column())),
        _ => None,
    }
}

/// The nearest place of `path` that exists: `path` itself, else its longest prefix that is
/// in the document, else `(1, 1)`.
pub fn locate_nearest(text: &str, path: &[Seg]) -> (usize, usize) {
    (0..=path.len())
        .rev()
        .find_map(|n| locate(text, &path[..n]))
        .unwrap_or((1, 1))
}

struct Find<'p>(&'p [Seg]);

impl<'de> DeserializeSeed<'de> for Find<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.0.is_empty() {
            // Raised from inside the deserializer, so it carries this value's position.
            return d.deserialize_any(Here);
        }
        d.deserialize_any(Walk(self.0))
    }
}

/// Fails on whatever value it is given.
struct Here;

macro_rules! here {
    ($($name:ident: $ty:ty),*) => {
        $(fn $name<E: de::Error>(self, _v: $ty) -> Result<(), E> {
            Err(E::custom(HERE))
        })*
    };
}

impl<'de> Visitor<'de> for Here {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any value")
    }
    here!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(HERE))
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(HERE))
    }
    fn visit_some<D: Deserializer<'de>>(self, _d: D) -> Result<(), D::Error> {
        Err(de::Error::custom(HERE))
    }
    fn visit_map<A: MapAccess<'de>>(self, _map: A) -> Result<(), A::Error> {
        Err(de::Error::custom(HERE))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<(), A::Error> {
        Err(de::Error::custom(HERE))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, _data: A) -> Result<(), A::Error> {
        Err(de::Error::custom(HERE))
    }
}

/// Walks into a mapping or sequence towards `self.0`.
struct Walk<'p>(&'p [Seg]);

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: de::Error>(self, _v: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _v: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _v: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _v: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _v: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged value (`!tag x`): not walked into.
        let (IgnoredAny, variant) = data.variant::<IgnoredAny>()?;
        de::VariantAccess::newtype_variant::<IgnoredAny>(variant).map(|_| ())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.0.split_first() else {
            return Ok(());
        };
        let want = match first {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        };
        while let Some(matched) = map.next_key_seed(KeySeed {
            want,
            last: rest.is_empty(),
        })? {
            if matched {
                map.next_value_seed(Find(rest))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.0.split_first() else {
            return Ok(());
        };
        let want = match first {
            Seg::Index(i) => Some(*i),
            Seg::Key(_) => None,
        };
        let mut i = 0;
        loop {
            let more = if Some(i) == want {
                seq.next_element_seed(Find(rest))?.is_some()
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                return Ok(());
            }
            i += 1;
        }
    }
}

/// Reads one mapping key: `Ok(true)` when it is the one wanted, and fails on it (marking
/// the key's position) when it is also the path's last step.
struct KeySeed<'p> {
    want: Option<&'p str>,
    last: bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl KeySeed<'_> {
    fn matched<E: de::Error>(&self, key: &str) -> Result<bool, E> {
        if self.want == Some(key) {
            if self.last {
                return Err(E::custom(HERE));
            }
            return Ok(true);
        }
        Ok(false)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a mapping key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        self.matched(v)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.matched(&v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        self.matched(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        self.matched(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        self.matched(&v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const DOC: &str = "\
name: stock
input_schema:
  type: object
  properties:
    sku: {type: string, minLength: 5}
    timeout_ms:
      type: integer
      default: \"1000\"
  required: [sku]
endpoint:
  url: https://x.example/{sku}
";

    fn p(keys: &[&str]) -> Vec<Seg> {
        keys.iter().map(|k| Seg::key(*k)).collect()
    }

    #[test]
    fn keys_are_found_in_block_and_flow_style() {
        assert_eq!(locate(DOC, &p(&["name"])), Some((1, 1)));
        assert_eq!(
            locate(
                DOC,
                &p(&["input_schema", "properties", "timeout_ms", "default"])
            ),
            Some((8, 7))
        );
        assert_eq!(
            locate(DOC, &p(&["input_schema", "properties", "sku", "minLength"])),
            Some((5, 25))
        );
        assert_eq!(locate(DOC, &p(&["endpoint", "url"])), Some((11, 3)));
        let mut req = p(&["input_schema", "required"]);
        req.push(Seg::Index(0));
        assert_eq!(locate(DOC, &req), Some((9, 14)));
        assert_eq!(locate(DOC, &p(&["endpoint", "headers"])), None);
        assert_eq!(locate_nearest(DOC, &p(&["endpoint", "headers"])), (10, 1));
        assert_eq!(display_path(&req), "input_schema.required[0]".to_string());
    }
}
