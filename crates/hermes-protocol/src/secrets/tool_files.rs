//! The secrets of the declarative tools' files, `HERMES_HOME/tools/*.yaml` (part of
//! [`super::collect_secrets`]).

use std::collections::BTreeMap;

use super::collect::{expand, is_secret_name, plainly_not_secret};
use crate::HermesHome;

/// The secrets of the declarative tools in `home`'s `tools/*.yaml` (seed 004 §3.2): every
/// `endpoint.headers` value that uses a `${VAR}` or sits under a secret name
/// (`Authorization`, `X-Api-Key`), `${VAR}`s expanded, and the value of every `${VAR}` the
/// file uses anywhere (a key in a URL's query) unless it is plainly none (a path, a
/// lowercase word), whatever the variable's name; labelled
/// `tools/<file>.endpoint.headers.<name>` and `tools/<file>.env.<VAR>`.
pub(super) fn collect_tool_files(
    home: &HermesHome,
    env_vars: &BTreeMap<String, String>,
    process_env: &BTreeMap<String, String>,
    out: &mut Vec<(String, String)>,
) {
    let Ok(entries) = std::fs::read_dir(home.tools_dir()) else {
        return;
    };
    // The tools read `${VAR}` as hermes reads secrets: `.env` over the process environment.
    let mut vars = process_env.clone();
    vars.extend(env_vars.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut files: Vec<std::path::PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    for file in files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
            continue;
        }
        // Read as the tools' loader reads them: regular files (a FIFO would block every
        // command) of at most 64 KiB, aliases expanded within a budget.
        let small_file = std::fs::metadata(&file)
            .is_ok_and(|m| m.is_file() && m.len() <= crate::yaml::MAX_TOOL_FILE_BYTES);
        if !small_file {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let label = format!("tools/{name}");
        for var in references(&text) {
            // A path or a plain word (`${HOME}`) is not a credential.
            if let Some(v) = vars.get(var)
                && !plainly_not_secret(v)
            {
                out.push((format!("{label}.env.{var}"), v.clone()));
            }
        }
        let Ok(value) = crate::yaml::from_str_bounded(&text, crate::yaml::MAX_TOOL_FILE_VALUES)
        else {
            continue;
        };
        if let Some(headers) = value
            .get("endpoint")
            .and_then(|e| e.get("headers"))
            .and_then(|h| h.as_mapping())
        {
            for (k, v) in headers {
                if let (Some(k), Some(v)) = (k.as_str(), v.as_str())
                    && (v.contains("${") || is_secret_name(k))
                {
                    out.push((format!("{label}.endpoint.headers.{k}"), expand(v, &vars)));
                }
            }
        }
    }
}

/// The names of the `${NAME}` references in `text`, in order (an unclosed `${` ends them).
fn references(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.find("${")?;
        let after = &rest[start + 2..];
        let end = after.find('}')?;
        rest = &after[end + 1..];
        Some(&after[..end])
    })
}

#[cfg(test)]
mod tests {
    use super::references;

    #[test]
    fn references_are_named_in_order_and_an_unclosed_one_ends_them() {
        let names: Vec<&str> = references("a ${ONE} b ${TWO}${THREE} ${open").collect();
        assert_eq!(names, ["ONE", "TWO", "THREE"]);
        assert_eq!(references("no refs").count(), 0);
    }
}
