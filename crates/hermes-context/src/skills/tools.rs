//! The read-only skill tools: `skills_list` and `skill_view` (FEATURES §7). `skill_view` is
//! confined to the skill's own directory inside the skills root (case C27).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use hermes_protocol::ToolSpec;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::fragments::Fragment;
use crate::skills::catalog::{SkillCatalog, SkillEntry};

/// Largest file `skill_view` returns, in bytes.
pub const VIEW_MAX_BYTES: u64 = 200_000;

/// Checks a skill name given by the model: non-empty, no path separators, no `..`, not
/// absolute. Returns the error text for the model otherwise.
pub fn check_skill_name_arg(name: &str) -> Result<(), String> {
    let bad = name.trim().is_empty()
        || name.contains('/')
        || name.contains('\\')
        || name.contains("..")
        || Path::new(name).is_absolute()
        || name.contains('\0');
    if bad {
        Err(format!(
            "invalid skill name {name:?}: use a name from skills_list (no paths)"
        ))
    } else {
        Ok(())
    }
}

/// Resolves `rel` inside `base`: relative, no `..`, and (when it exists) its canonical path
/// must stay inside `base`'s canonical path, so symlinks cannot lead out.
///
/// # Errors
/// The text for the model when the path is rejected.
pub fn confined_path(base: &Path, rel: &str) -> Result<PathBuf, String> {
    let p = Path::new(rel);
    if rel.trim().is_empty()
        || p.components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "invalid file path {rel:?}: give a path relative to the skill directory, without '..'"
        ));
    }
    let joined = base.join(p);
    if joined.exists() {
        let canon_base = base.canonicalize().map_err(|e| e.to_string())?;
        let canon = joined.canonicalize().map_err(|e| e.to_string())?;
        if !canon.starts_with(&canon_base) {
            return Err(format!(
                "invalid file path {rel:?}: it leads outside the skill"
            ));
        }
    }
    Ok(joined)
}

/// Finds skill `name` under `root` and checks its directory really is inside `root`.
pub(crate) fn locate(root: &Path, name: &str) -> Result<SkillEntry, String> {
    check_skill_name_arg(name)?;
    let catalog = SkillCatalog::load_cached(root);
    let skill = catalog
        .find(name)
        .cloned()
        .ok_or_else(|| format!("no skill named {name:?}; call skills_list to see them"))?;
    let canon_root = root.canonicalize().map_err(|e| e.to_string())?;
    let canon_dir = skill.dir.canonicalize().map_err(|e| e.to_string())?;
    if !canon_dir.starts_with(&canon_root) {
        return Err(format!(
            "invalid skill name {name:?}: outside the skills directory"
        ));
    }
    Ok(skill)
}

fn list_support_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(read) = fs::read_dir(&d) else { continue };
        for e in read.flatten() {
            let path = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_file()
                && let Ok(rel) = path.strip_prefix(dir)
                && rel != Path::new("SKILL.md")
            {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

fn read_capped(path: &Path) -> Result<String, String> {
    let meta = fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err("not a file".to_string());
    }
    if meta.len() > VIEW_MAX_BYTES {
        return Err(format!(
            "the file has {} bytes, over the {VIEW_MAX_BYTES}-byte limit of skill_view",
            meta.len()
        ));
    }
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "the file is binary, not text".to_string())
}

/// `skill_view(name, file_path?)` over the skills root. Toolset `skills`.
#[derive(Debug, Clone)]
pub struct SkillViewTool {
    root: PathBuf,
    disabled: Arc<BTreeSet<String>>,
}

impl SkillViewTool {
    /// A tool reading skills under `root` (`HERMES_HOME/skills`).
    pub fn new(root: impl Into<PathBuf>) -> SkillViewTool {
        SkillViewTool {
            root: root.into(),
            disabled: Arc::default(),
        }
    }

    /// The same tool refusing the skills named in `disabled` (`skills.disabled` and the
    /// platform's `skills.platform_disabled`), as Python Hermes' `skill_view` does.
    pub fn with_disabled(mut self, disabled: BTreeSet<String>) -> SkillViewTool {
        self.disabled = Arc::new(disabled);
        self
    }

    /// The blocking part of a call; the `Err` text goes to the model as an error result.
    pub fn view(&self, name: &str, file_path: Option<&str>) -> Result<String, String> {
        let skill = locate(&self.root, name)?;
        if self.disabled.contains(&skill.name) {
            return Err(format!(
                "skill {:?} is disabled (skills.disabled in config.yaml); it cannot be viewed",
                skill.name
            ));
        }
        match file_path {
            Some(rel) => {
                let path = confined_path(&skill.dir, rel)?;
                read_capped(&path)
            }
            None => {
                let body = read_capped(&skill.dir.join("SKILL.md"))?;
                let files = list_support_files(&skill.dir);
                Ok(json!({
                    "name": skill.name,
                    "category": skill.category,
                    "directory": skill.dir.display().to_string(),
                    "content": body,
                    "files": files,
                })
                .to_string())
            }
        }
    }
}

#[async_trait::async_trait]
impl Tool for SkillViewTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "skill_view".to_string(),
            description: Fragment::ToolSkillView.raw().trim().to_string(),
            parameters: json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "Skill name from the index or skills_list."},
                "file_path": {"type": "string", "description": "A supporting file, relative to the skill directory."}
            }, "required": ["name"]}),
        }
    }
    fn toolset(&self) -> &'static str {
        "skills"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let Some(name) = args.get("name").and_then(Value::as_str).map(str::to_string) else {
            return ToolOutput::error("`name` is required");
        };
        let file = args
            .get("file_path")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let me = self.clone();
        let span = super::manage::skill_span("skill.view", &args);
        match tokio::task::spawn_blocking(move || {
            let _entered = span.entered();
            me.view(&name, file.as_deref())
        })
        .await
        {
            Ok(Ok(text)) => ToolOutput::ok(text),
            Ok(Err(e)) => ToolOutput::error(e),
            Err(e) => ToolOutput::error(format!("skill_view did not finish: {e}")),
        }
    }
}

/// `skills_list(category?)`. Toolset `skills`.
#[derive(Debug, Clone)]
pub struct SkillsListTool {
    root: PathBuf,
    disabled: Arc<BTreeSet<String>>,
}

impl SkillsListTool {
    /// A tool listing skills under `root`.
    pub fn new(root: impl Into<PathBuf>) -> SkillsListTool {
        SkillsListTool {
            root: root.into(),
            disabled: Arc::default(),
        }
    }

    /// The same tool leaving out the skills named in `disabled`.
    pub fn with_disabled(mut self, disabled: BTreeSet<String>) -> SkillsListTool {
        self.disabled = Arc::new(disabled);
        self
    }

    /// The listing as JSON text: `{"skills": [{name, category, description}], "count"}`.
    pub fn list(&self, category: Option<&str>) -> String {
        let catalog = SkillCatalog::load_cached(&self.root);
        let skills: Vec<Value> = catalog
            .skills
            .iter()
            .filter(|s| category.is_none_or(|c| s.category.as_deref() == Some(c)))
            .filter(|s| !self.disabled.contains(&s.name))
            .map(|s| json!({"name": s.name, "category": s.category, "description": s.description}))
            .collect();
        json!({"count": skills.len(), "skills": skills}).to_string()
    }
}

#[async_trait::async_trait]
impl Tool for SkillsListTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "skills_list".to_string(),
            description: Fragment::ToolSkillsList.raw().trim().to_string(),
            parameters: json!({"type": "object", "properties": {
                "category": {"type": "string", "description": "Only this category."}
            }}),
        }
    }
    fn toolset(&self) -> &'static str {
        "skills"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let category = args
            .get("category")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let me = self.clone();
        match tokio::task::spawn_blocking(move || me.list(category.as_deref())).await {
            Ok(text) => ToolOutput::ok(text),
            Err(e) => ToolOutput::error(format!("skills_list did not finish: {e}")),
        }
    }
}
