//! The explicit tool registry and toolset resolution (ARCHITECTURE §3; FEATURES §4).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use hermes_protocol::ToolSpec;

use crate::tool::Tool;
use crate::toolsets::{TOOLSET_DEFS, ToolsetDef, ToolsetSelection, UnknownToolset};

/// Errors of [`Registry::register`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// A tool with this name is already registered.
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
    /// A composite toolset with this name is already defined.
    #[error("a toolset named `{0}` is already defined")]
    DuplicateToolset(String),
}

/// The explicit list of tools, in registration order (which is the order of tool specs sent
/// to the model: stable, so prompt caches survive).
#[derive(Clone)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    toolsets: Vec<ToolsetDef>,
}

impl Default for Registry {
    /// No tools; the built-in composite toolsets of [`TOOLSET_DEFS`].
    fn default() -> Registry {
        Registry {
            tools: Vec::new(),
            toolsets: TOOLSET_DEFS.to_vec(),
        }
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .field("toolsets", &self.toolset_names())
            .finish()
    }
}

impl Registry {
    /// A registry with no tools and the built-in composite toolsets ([`TOOLSET_DEFS`]).
    pub fn new() -> Registry {
        Registry::default()
    }

    /// The built-in tools: [`crate::file::tools`], [`crate::terminal::tools`] (one shared
    /// [`crate::ProcessRegistry`] for `terminal` and `process`), then `todo` with a fresh
    /// list ([`crate::TodoTool`]; build one registry per agent so lists are not shared).
    pub fn builtin() -> Registry {
        let mut r = Registry::new();
        for tool in crate::file::tools()
            .into_iter()
            .chain(crate::terminal::tools())
            .chain([Arc::new(crate::TodoTool::new()) as Arc<dyn Tool>])
        {
            // Built-in names are distinct; a duplicate would be a programming error caught
            // by the tests, so it is skipped rather than panicking.
            let _ = r.register(tool);
        }
        r
    }

    /// Adds a tool at the end (MCP tools are added at run time).
    ///
    /// # Errors
    /// [`RegistryError::Duplicate`] when a tool of the same name exists.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let name = tool.spec().name;
        if self.tools.iter().any(|t| t.spec().name == name) {
            return Err(RegistryError::Duplicate(name));
        }
        self.tools.push(tool);
        Ok(())
    }

    /// Adds a composite toolset (e.g. a per-platform preset).
    ///
    /// # Errors
    /// [`RegistryError::DuplicateToolset`] when a composite toolset of that name exists.
    pub fn define_toolset(&mut self, def: ToolsetDef) -> Result<(), RegistryError> {
        if self.toolsets.iter().any(|d| d.name == def.name) {
            return Err(RegistryError::DuplicateToolset(def.name.to_string()));
        }
        self.toolsets.push(def);
        Ok(())
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.spec().name == name).cloned()
    }

    /// Every registered tool name, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name).collect()
    }

    /// Specs of every registered tool that is available on this machine, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| t.available().is_ok())
            .map(|t| t.spec())
            .collect()
    }

    /// Every known toolset name: the composite definitions and the toolsets of registered
    /// tools, sorted.
    pub fn toolset_names(&self) -> Vec<String> {
        let mut names: BTreeSet<String> =
            self.toolsets.iter().map(|d| d.name.to_string()).collect();
        names.extend(self.tools.iter().map(|t| t.toolset().to_string()));
        names.into_iter().collect()
    }

    /// Resolves a selection to tools: enabled toolsets expanded (includes followed once each),
    /// disabled toolsets subtracted last, unavailable tools left out (see
    /// [`ToolSet::unavailable`]). The result keeps registration order.
    ///
    /// # Errors
    /// [`UnknownToolset`] for the first enabled or disabled name that does not exist.
    pub fn select(&self, selection: &ToolsetSelection) -> Result<ToolSet, UnknownToolset> {
        let mut enabled = HashSet::new();
        for name in &selection.enabled {
            self.expand(name, true, &mut HashSet::new(), &mut enabled)?;
        }
        let mut disabled = HashSet::new();
        for name in &selection.disabled {
            self.expand(name, true, &mut HashSet::new(), &mut disabled)?;
        }
        let mut tools = Vec::new();
        let mut unavailable = Vec::new();
        for tool in &self.tools {
            let name = tool.spec().name;
            if !enabled.contains(&name) || disabled.contains(&name) {
                continue;
            }
            match tool.available() {
                Ok(()) => tools.push(tool.clone()),
                Err(reason) => unavailable.push((name, reason)),
            }
        }
        Ok(ToolSet { tools, unavailable })
    }

    /// Adds the tools of toolset `name` to `out`. A name the user gave (`top_level`) must
    /// exist; a toolset that a preset includes may be absent from this build or machine
    /// (e.g. `memory` when only hermes-tools is registered) and then adds nothing.
    fn expand(
        &self,
        name: &str,
        top_level: bool,
        visited: &mut HashSet<String>,
        out: &mut HashSet<String>,
    ) -> Result<(), UnknownToolset> {
        if !visited.insert(name.to_string()) {
            return Ok(());
        }
        let def = self.toolsets.iter().find(|d| d.name == name);
        let base: Vec<String> = self
            .tools
            .iter()
            .filter(|t| t.toolset() == name)
            .map(|t| t.spec().name)
            .collect();
        if def.is_none() && base.is_empty() {
            if !top_level {
                return Ok(());
            }
            return Err(UnknownToolset {
                name: name.to_string(),
                known: self.toolset_names(),
            });
        }
        out.extend(base);
        if let Some(def) = def {
            out.extend(def.tools.iter().map(|t| t.to_string()));
            for inc in def.includes {
                self.expand(inc, false, visited, out)?;
            }
        }
        Ok(())
    }

    /// Up to `n` registered tool names closest to `name` (for "unknown tool" errors):
    /// prefix/substring matches first, then by Levenshtein distance; names farther than
    /// `max(2, len/2)` edits are left out.
    pub fn closest_names(&self, name: &str, n: usize) -> Vec<String> {
        closest_names(name, self.names().iter().map(String::as_str), n)
    }
}

/// Up to `n` of `candidates` closest to `name`: prefix or substring matches rank first, then
/// smaller Levenshtein distance (case-insensitive); candidates farther than `max(2, len/2)`
/// edits that are not substrings are dropped. Ties keep candidate order.
pub fn closest_names<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<String> {
    let needle = name.to_lowercase();
    let limit = (needle.chars().count() / 2).max(2);
    let mut scored: Vec<(usize, usize, String)> = Vec::new();
    for (i, c) in candidates.into_iter().enumerate() {
        let lc = c.to_lowercase();
        let d = levenshtein(&needle, &lc);
        let related = !needle.is_empty()
            && (lc.starts_with(&needle)
                || needle.starts_with(&lc)
                || lc.contains(&needle)
                || needle.contains(&lc));
        if related {
            scored.push((0, d * 1000 + i, c.to_string()));
        } else if d <= limit {
            scored.push((1, d * 1000 + i, c.to_string()));
        }
    }
    scored.sort();
    scored.into_iter().take(n).map(|(_, _, s)| s).collect()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The resolved tools of one selection, in registration order.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
    unavailable: Vec<(String, String)>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("tools", &self.names())
            .field("unavailable", &self.unavailable)
            .finish()
    }
}

impl ToolSet {
    /// The tools, in registration order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }
    /// Tool names, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name).collect()
    }
    /// Specs for the model, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }
    /// The selected tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.spec().name == name).cloned()
    }
    /// Selected tools left out because this machine cannot run them: `(name, reason)`.
    pub fn unavailable(&self) -> &[(String, String)] {
        &self.unavailable
    }
    /// Up to `n` selected tool names closest to `name` (see [`closest_names`]).
    pub fn closest_names(&self, name: &str, n: usize) -> Vec<String> {
        let names = self.names();
        closest_names(name, names.iter().map(String::as_str), n)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn levenshtein_basics() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "ab"), 2);
        assert_eq!(
            closest_names("read_fil", ["write_file", "read_file", "patch"], 1),
            vec!["read_file"]
        );
        assert_eq!(
            closest_names("pach", ["write_file", "patch"], 3),
            vec!["patch"]
        );
        assert!(closest_names("zzzzzz", ["read_file"], 3).is_empty());
    }
}
