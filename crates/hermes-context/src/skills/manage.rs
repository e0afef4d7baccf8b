//! `skill_manage` (FEATURES §7): create / edit / patch / delete a skill, write or remove a
//! supporting file — each validated before anything is written.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use hermes_protocol::ToolSpec;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use regex::Regex;
use serde_json::{Value, json};

use crate::fragments::Fragment;
use crate::injection::{ScanScope, scan_for_injection};
use crate::skills::frontmatter::parse_skill_md;
use crate::skills::tools::{confined_path, locate};

/// Longest skill name, in chars (agentskills.io).
pub const NAME_MAX_CHARS: usize = 64;
/// Longest description hermes writes, in chars (FEATURES §7).
pub const DESCRIPTION_MAX_CHARS: usize = 1_024;
/// Largest `SKILL.md` hermes writes, in chars.
pub const SKILL_MD_MAX_CHARS: usize = 100_000;
/// Largest supporting file hermes writes, in bytes.
pub const SUPPORT_FILE_MAX_BYTES: usize = 1_000_000;
/// The lock file in the skills folder that `skill_manage` holds while it changes a skill
/// (`flock(2)`, which also works between machines on NFSv4 and most shared volumes).
pub const SKILLS_LOCK_FILE: &str = ".skill_manage.lock";
/// Folders a supporting file may live in.
pub const SUPPORT_DIRS: [&str; 4] = ["references", "templates", "scripts", "assets"];

static NAME_RE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9][a-z0-9._-]*$").ok());

/// Checks a skill or category name: `^[a-z0-9][a-z0-9._-]*$`, at most [`NAME_MAX_CHARS`].
pub fn valid_skill_name(name: &str) -> bool {
    name.chars().count() <= NAME_MAX_CHARS
        && !name.contains("..")
        && NAME_RE.as_ref().is_some_and(|re| re.is_match(name))
}

/// Validates a whole `SKILL.md` written by the model for skill `name`.
///
/// # Errors
/// Text for the model: missing/invalid frontmatter, name mismatch, missing or long
/// description, size over [`SKILL_MD_MAX_CHARS`], or a safety-scan hit.
pub fn validate_skill_md(name: &str, content: &str) -> Result<(), String> {
    if content.chars().count() > SKILL_MD_MAX_CHARS {
        return Err(format!("SKILL.md is over {SKILL_MD_MAX_CHARS} chars"));
    }
    let parsed = parse_skill_md(content).map_err(|e| format!("SKILL.md: {e}"))?;
    match parsed.meta.name.as_deref() {
        Some(n) if n == name => {}
        Some(n) => {
            return Err(format!(
                "frontmatter name {n:?} must equal the skill name {name:?}"
            ));
        }
        None => return Err("the frontmatter needs `name`".to_string()),
    }
    match parsed.meta.description.as_deref() {
        None => return Err("the frontmatter needs `description`".to_string()),
        Some(d) if d.chars().count() > DESCRIPTION_MAX_CHARS => {
            return Err(format!("description is over {DESCRIPTION_MAX_CHARS} chars"));
        }
        Some(_) => {}
    }
    if parsed.body.trim().is_empty() {
        return Err("SKILL.md needs instructions after the frontmatter".to_string());
    }
    scan(content)
}

fn scan(content: &str) -> Result<(), String> {
    match scan_for_injection(content, ScanScope::Context).first() {
        Some(f) => Err(format!(
            "refused: the content was flagged by the safety scan ({})",
            f.category
        )),
        None => Ok(()),
    }
}

fn write_atomic(path: &Path, content: &[u8]) -> Result<(), String> {
    let dir = path.parent().ok_or("no parent directory")?;
    hermes_protocol::private_fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| e.to_string())?;
    tmp.write_all(content).map_err(|e| e.to_string())?;
    tmp.persist(path).map_err(|e| e.error.to_string())?;
    Ok(())
}

fn arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("`{key}` is required for this action"))
}

/// `skill_manage` over the skills root. Toolset `skills`.
#[derive(Debug, Clone)]
pub struct SkillManageTool {
    root: PathBuf,
}

impl SkillManageTool {
    /// Takes the skills folder's lock (released when the returned file drops), creating the
    /// folder and the lock file when missing.
    fn lock(&self) -> Result<fs::File, String> {
        hermes_protocol::private_fs::create_dir_all(&self.root)
            .map_err(|e| format!("{}: {e}", self.root.display()))?;
        let path = self.root.join(SKILLS_LOCK_FILE);
        let file = hermes_protocol::private_fs::open_append(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        file.lock()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(file)
    }

    /// A tool writing skills under `root` (`HERMES_HOME/skills`).
    pub fn new(root: impl Into<PathBuf>) -> SkillManageTool {
        SkillManageTool { root: root.into() }
    }

    /// Runs one action (blocking I/O). `Ok` is a short confirmation for the model.
    ///
    /// # Errors
    /// Text for the model; nothing was changed.
    ///
    /// Every action holds [`SKILLS_LOCK_FILE`]'s exclusive lock from reading the skill to
    /// writing it, so two sessions or gateway replicas on one home (a shared volume included)
    /// never lose each other's change: a `patch` reads the file another one just wrote.
    pub fn run(&self, args: &Value) -> Result<String, String> {
        let action = arg(args, "action")?;
        let name = arg(args, "name")?;
        let _lock = self.lock()?;
        match action {
            "create" => self.create(name, args),
            "edit" => {
                let skill = locate(&self.root, name)?;
                let content = arg(args, "content")?;
                validate_skill_md(&skill.name, content)?;
                write_atomic(&skill.dir.join("SKILL.md"), content.as_bytes())?;
                Ok(format!("skill {name:?} rewritten"))
            }
            "patch" => {
                let skill = locate(&self.root, name)?;
                let old = arg(args, "old_string")?;
                let new = arg(args, "new_string")?;
                let path = skill.dir.join("SKILL.md");
                let current = fs::read_to_string(&path).map_err(|e| e.to_string())?;
                match current.matches(old).count() {
                    0 => return Err("old_string does not occur in SKILL.md".to_string()),
                    1 => {}
                    n => {
                        return Err(format!(
                            "old_string occurs {n} times; quote more so it is unique"
                        ));
                    }
                }
                let updated = current.replacen(old, new, 1);
                validate_skill_md(&skill.name, &updated)?;
                write_atomic(&path, updated.as_bytes())?;
                Ok(format!("skill {name:?} patched"))
            }
            "delete" => {
                let skill = locate(&self.root, name)?;
                fs::remove_dir_all(&skill.dir).map_err(|e| e.to_string())?;
                Ok(format!("skill {name:?} deleted"))
            }
            "write_file" => {
                let skill = locate(&self.root, name)?;
                let rel = arg(args, "file_path")?;
                let content = arg(args, "file_content")?;
                check_support_path(rel)?;
                if content.len() > SUPPORT_FILE_MAX_BYTES {
                    return Err(format!(
                        "file_content is over {SUPPORT_FILE_MAX_BYTES} bytes"
                    ));
                }
                scan(content)?;
                let path = confined_path(&skill.dir, rel)?;
                write_atomic(&path, content.as_bytes())?;
                Ok(format!("wrote {rel} in skill {name:?}"))
            }
            "remove_file" => {
                let skill = locate(&self.root, name)?;
                let rel = arg(args, "file_path")?;
                check_support_path(rel)?;
                let path = confined_path(&skill.dir, rel)?;
                fs::remove_file(&path).map_err(|e| format!("cannot remove {rel}: {e}"))?;
                Ok(format!("removed {rel} from skill {name:?}"))
            }
            other => Err(format!(
                "unknown action `{other}`; use create, edit, patch, delete, write_file or remove_file"
            )),
        }
    }

    fn create(&self, name: &str, args: &Value) -> Result<String, String> {
        if !valid_skill_name(name) {
            return Err(format!(
                "invalid skill name {name:?}: use lowercase letters, digits, '.', '_' and '-' (at most {NAME_MAX_CHARS})"
            ));
        }
        let category = args
            .get("category")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty());
        if let Some(c) = category
            && !valid_skill_name(c)
        {
            return Err(format!("invalid category {c:?}"));
        }
        if locate(&self.root, name).is_ok() {
            return Err(format!("a skill named {name:?} exists; use edit or patch"));
        }
        let content = arg(args, "content")?;
        validate_skill_md(name, content)?;
        let dir = match category {
            Some(c) => self.root.join(c).join(name),
            None => self.root.join(name),
        };
        if dir.exists() {
            return Err(format!("{} already exists", dir.display()));
        }
        write_atomic(&dir.join("SKILL.md"), content.as_bytes())?;
        Ok(format!("skill {name:?} created at {}", dir.display()))
    }
}

fn check_support_path(rel: &str) -> Result<(), String> {
    let first = rel.split(['/', '\\']).next().unwrap_or("");
    if SUPPORT_DIRS.contains(&first) && rel.len() > first.len() + 1 {
        Ok(())
    } else {
        Err(format!(
            "file_path must be inside {} (e.g. references/notes.md)",
            SUPPORT_DIRS.join("/, ") + "/"
        ))
    }
}

#[async_trait::async_trait]
impl Tool for SkillManageTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "skill_manage".to_string(),
            description: Fragment::ToolSkillManage.raw().trim().to_string(),
            parameters: json!({"type": "object", "properties": {
                "action": {"type": "string", "enum": ["create", "edit", "patch", "delete", "write_file", "remove_file"]},
                "name": {"type": "string", "description": "Skill name."},
                "category": {"type": "string", "description": "Category folder for create (optional)."},
                "content": {"type": "string", "description": "Whole SKILL.md (create, edit)."},
                "old_string": {"type": "string", "description": "Exact text to replace (patch)."},
                "new_string": {"type": "string", "description": "Replacement (patch)."},
                "file_path": {"type": "string", "description": "Supporting file path relative to the skill (write_file, remove_file)."},
                "file_content": {"type": "string", "description": "Content of the supporting file (write_file)."}
            }, "required": ["action", "name"]}),
        }
    }
    fn toolset(&self) -> &'static str {
        "skills"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let me = self.clone();
        let span = skill_span("skill.manage", &args);
        match tokio::task::spawn_blocking(move || {
            let _entered = span.entered();
            me.run(&args)
        })
        .await
        {
            Ok(Ok(text)) => ToolOutput::ok(text),
            Ok(Err(e)) => ToolOutput::error(e),
            Err(e) => ToolOutput::error(format!("skill_manage did not finish: {e}")),
        }
    }
}

/// The span of one skill operation (issue 24 §1): the action and the skill's name, which
/// are the user's own labels, never the skill's text.
pub(crate) fn skill_span(name: &'static str, args: &Value) -> tracing::Span {
    let field = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("");
    tracing::info_span!(
        "skill",
        "otel.name" = name,
        "hermes.skill.action" = field("action"),
        "hermes.skill.name" = field("name"),
    )
}
