//! `write_file(path, content)`: atomic whole-file writes behind the deny-list.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use hermes_protocol::ToolSpec;
use serde_json::{Value, json};

use super::req_str;
use crate::tool::{Access, Parallelism, Tool, ToolContext, ToolOutput};

/// `write_file`: creates or replaces a file with `content` (UTF-8 text), creating missing
/// parent directories. The path is checked against the sandbox policy
/// ([`crate::sandbox::SandboxPolicy::check_write`], symlinks resolved) and
/// written atomically with [`atomic_write`].
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFileTool;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically: a temporary file in the same directory is written,
/// flushed, given the permissions of the file it replaces (if any) and renamed over `path`.
/// Missing parent directories are created.
///
/// # Errors
/// The I/O error of any step; the temporary file is removed on failure.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = parent.join(format!(
        ".{name}.hermes-tmp-{}-{}-{nanos}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// [`atomic_write`] from a file tool's confined thread ([`crate::sandbox::confine`]). In a
/// folder on the way to a protected path (the workspace `~`, which holds `.bashrc`), the
/// sandbox lets existing files be edited but no entry be created, so the temporary file of
/// an atomic write is refused: an existing file is then rewritten in place (not atomic),
/// as a command's `>` would. A new file there stays refused, as for commands.
pub(crate) fn write_confined(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    match atomic_write(path, bytes) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && path.is_file() => {
            std::fs::write(path, bytes)
        }
        other => other,
    }
}

#[async_trait::async_trait]
impl Tool for WriteFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Create or overwrite a text file with the given content. Parent \
                          directories are created. Use patch for small edits."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, absolute or relative to the working directory."},
                    "content": {"type": "string", "description": "The complete new file content."}
                },
                "required": ["path", "content"]
            }),
        }
    }
    fn toolset(&self) -> &'static str {
        super::TOOLSET
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::PathScoped {
            arg: "path",
            access: Access::Write,
        }
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let (shown, content) = match (req_str(&args, "path"), req_str(&args, "content")) {
            (Ok(p), Ok(c)) => (p.to_string(), c.to_string()),
            (Err(e), _) | (_, Err(e)) => return ToolOutput::error(e),
        };
        let path = ctx.resolve_path(&shown);
        let policy = ctx.policy();
        let job = move |policy: &crate::sandbox::SandboxPolicy| -> Result<String, String> {
            let target = policy.check_write(&path)?;
            if target.is_dir() {
                return Err(format!("{shown} is a directory"));
            }
            let existed = target.exists();
            write_confined(&target, content.as_bytes())
                .map_err(|e| format!("cannot write {shown}: {e}"))?;
            let lines = content.lines().count();
            Ok(format!(
                "{} {shown}: {} bytes, {lines} lines",
                if existed { "Overwrote" } else { "Created" },
                content.len()
            ))
        };
        match crate::sandbox::confined(policy, job).await {
            Ok(t) => ToolOutput::ok(t),
            Err(e) => ToolOutput::error(e),
        }
    }
}
