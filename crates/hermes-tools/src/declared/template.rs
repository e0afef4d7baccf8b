//! URL and header templates of declarative tools: `{arg}` is filled from the call's
//! arguments (percent-encoded, RFC 3986 unreserved characters kept), `${NAME}` from the
//! environment or `HERMES_HOME/.env` (the way `mcp_servers` values are expanded).
//!
//! Rules: an `{arg}` may appear only after the URL's authority (`https://host/…`), so no
//! argument can change the scheme, host or port; a path segment that an argument helps to
//! write may not be `.` or `..` (or a `%2e` spelling of them), alone or beside literal text
//! or another argument (`{a}{b}`): it would climb the path after the URL's dot-segment
//! normalization.

use std::collections::BTreeMap;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text as written.
    Lit(String),
    /// `{name}`: a call argument.
    Arg(String),
    /// `${NAME}`: an environment variable.
    Env(String),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

impl Template {
    /// Parses `text`; `args_allowed` is false for headers (only `${NAME}` there).
    ///
    /// # Errors
    /// A message naming the malformed placeholder.
    pub fn parse(text: &str, args_allowed: bool) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(i) = rest.find(['{', '}', '$']) {
            lit.push_str(&rest[..i]);
            let tail = &rest[i..];
            if let Some(after) = tail.strip_prefix("${") {
                let end = after
                    .find('}')
                    .ok_or_else(|| format!("`${{` without a closing `}}` in `{text}`"))?;
                let name = &after[..end];
                if !is_ident(name) {
                    return Err(format!("`${{{name}}}` is not a variable name"));
                }
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                parts.push(Part::Env(name.to_string()));
                rest = &after[end + 1..];
            } else if let Some(after) = tail.strip_prefix('{') {
                let end = after
                    .find('}')
                    .ok_or_else(|| format!("`{{` without a closing `}}` in `{text}`"))?;
                let name = &after[..end];
                if !args_allowed {
                    return Err(format!(
                        "`{{{name}}}`: only `${{NAME}}` (an environment variable) can be used here"
                    ));
                }
                if !is_ident(name) {
                    return Err(format!("`{{{name}}}` is not an argument name"));
                }
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                parts.push(Part::Arg(name.to_string()));
                rest = &after[end + 1..];
            } else if tail.starts_with('}') {
                return Err(format!("`}}` without an opening `{{` in `{text}`"));
            } else {
                lit.push('$');
                rest = &tail[1..];
            }
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Template { parts })
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The `{arg}` names, in order of appearance.
    pub fn args(&self) -> Vec<&str> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Arg(a) => Some(a.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The `${NAME}` names, in order of appearance.
    pub fn env_names(&self) -> Vec<&str> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Env(a) => Some(a.as_str()),
                _ => None,
            })
            .collect()
    }

    /// This template with every `${NAME}` replaced by its value in `env`.
    ///
    /// # Errors
    /// The first variable that is not set (or is blank).
    pub fn with_env(&self, env: &BTreeMap<String, String>) -> Result<Template, String> {
        let mut parts: Vec<Part> = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            let part = match part {
                Part::Env(name) => match env.get(name).filter(|v| !v.trim().is_empty()) {
                    Some(v) => Part::Lit(v.clone()),
                    None => {
                        return Err(format!(
                            "{name} is not set (environment or HERMES_HOME/.env)"
                        ));
                    }
                },
                other => other.clone(),
            };
            match (parts.last_mut(), part) {
                (Some(Part::Lit(prev)), Part::Lit(next)) => prev.push_str(&next),
                (_, part) => parts.push(part),
            }
        }
        Ok(Template { parts })
    }

    /// The text with `${NAME}` resolved from `env` and each `{arg}` replaced by `sample`
    /// (for checking that the URL parses when the file is loaded).
    pub fn sample(&self, env: &BTreeMap<String, String>, sample: &str) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Lit(s) => s.clone(),
                Part::Arg(_) => sample.to_string(),
                Part::Env(n) => env.get(n).cloned().unwrap_or_else(|| "x".to_string()),
            })
            .collect()
    }

    /// True when no `{arg}` comes before the end of the URL's authority (`scheme://host:port`).
    pub fn args_after_authority(&self) -> bool {
        let mut text = String::new();
        for part in &self.parts {
            match part {
                Part::Lit(s) => text.push_str(s),
                Part::Env(_) => text.push('x'),
                Part::Arg(_) => {
                    let Some(scheme_end) = text.find("://") else {
                        return false;
                    };
                    return text[scheme_end + 3..].contains(['/', '?']);
                }
            }
        }
        true
    }

    /// Fills the `{arg}`s from `args` (an object): strings as they are, numbers and booleans
    /// as JSON text, arrays and objects as compact JSON, each percent-encoded. `${NAME}`
    /// parts must have been resolved ([`Template::with_env`]).
    ///
    /// # Errors
    /// A message for the model: a missing or null argument, a `.`/`..` path value, or an
    /// unresolved variable.
    pub fn fill(&self, args: &serde_json::Value) -> Result<String, String> {
        let mut out = String::new();
        // Where each argument's text went, for the dot-segment check below.
        let mut filled: Vec<(&str, std::ops::Range<usize>)> = Vec::new();
        for part in &self.parts {
            match part {
                Part::Lit(s) => out.push_str(s),
                Part::Env(n) => return Err(format!("{n} is not set")),
                Part::Arg(name) => {
                    let text = match args.get(name) {
                        None | Some(serde_json::Value::Null) => {
                            return Err(format!(
                                "`{name}` is needed to build the request URL but was not given"
                            ));
                        }
                        Some(serde_json::Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                    };
                    let start = out.len();
                    out.push_str(&percent_encode(&text));
                    filled.push((name, start..out.len()));
                }
            }
        }
        if let Some((name, segment)) = climbing_segment(&out, &filled) {
            return Err(format!(
                "`{name}` may not make the URL path segment `{segment}` (a `.` or `..` segment climbs the path)"
            ));
        }
        Ok(out)
    }
}

/// The first path segment of `url` that an argument (at the byte ranges of `filled`) helps
/// to write and that is a dot segment (`.`, `..`, or their `%2e` spellings, which URL
/// parsing removes together with the segment before): the argument's name and the segment.
/// A value beside literal text or another argument counts (`{a}{b}` with `.` and `.`).
fn climbing_segment<'a>(
    url: &str,
    filled: &[(&'a str, std::ops::Range<usize>)],
) -> Option<(&'a str, String)> {
    let after_scheme = url.find("://")? + 3;
    let path_start = after_scheme + url[after_scheme..].find('/')?;
    let path_end = url[path_start..]
        .find(['?', '#'])
        .map_or(url.len(), |i| path_start + i);
    let mut seg_start = path_start + 1;
    for seg in url[path_start + 1..path_end].split('/') {
        let range = seg_start..seg_start + seg.len();
        seg_start = range.end + 1;
        let lower = seg.to_ascii_lowercase();
        let dots = lower.replace("%2e", ".");
        if !matches!(dots.as_str(), "." | "..") {
            continue;
        }
        if let Some((name, _)) = filled
            .iter()
            .find(|(_, r)| r.start < range.end && range.start < r.end)
        {
            return Some((name, seg.to_string()));
        }
    }
    None
}

/// `text` with every byte outside RFC 3986's unreserved set (`A-Z a-z 0-9 - . _ ~`)
/// written as `%XX`: safe in a path segment and in a query component alike.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn templates_parse_fill_and_encode() {
        let t = Template::parse(
            "https://api.example/v1/items/{sku}?key=${API_KEY}&q={q}",
            true,
        )
        .unwrap();
        assert_eq!(t.args(), vec!["sku", "q"]);
        assert_eq!(t.env_names(), vec!["API_KEY"]);
        assert!(t.args_after_authority());
        let env: BTreeMap<String, String> = [("API_KEY".to_string(), "k1".to_string())].into();
        let t = t.with_env(&env).unwrap();
        let url = t.fill(&json!({"sku": "a b/../c", "q": "x&y=z"})).unwrap();
        assert_eq!(
            url,
            "https://api.example/v1/items/a%20b%2F..%2Fc?key=k1&q=x%26y%3Dz"
        );
        assert!(
            t.fill(&json!({"sku": "..", "q": "x"}))
                .unwrap_err()
                .contains("may not make the URL path segment `..`")
        );
        assert!(t.fill(&json!({"q": 1})).unwrap_err().contains("`sku`"));
        assert_eq!(
            Template::parse("x/${MISSING}", false)
                .unwrap()
                .with_env(&BTreeMap::new())
                .unwrap_err(),
            "MISSING is not set (environment or HERMES_HOME/.env)"
        );
    }

    #[test]
    fn malformed_and_misplaced_placeholders_are_refused() {
        assert!(Template::parse("https://h/{a", true).is_err());
        assert!(Template::parse("https://h/a}", true).is_err());
        assert!(Template::parse("Bearer {token}", false).is_err());
        assert!(Template::parse("https://h/{a b}", true).is_err());
        assert!(
            !Template::parse("https://{host}/x", true)
                .unwrap()
                .args_after_authority()
        );
        assert!(
            !Template::parse("{scheme}://h/x", true)
                .unwrap()
                .args_after_authority()
        );
        assert!(Template::parse("costs $5", false).is_ok());
    }
}
