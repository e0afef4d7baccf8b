//! Hands a file to the user's `$VISUAL`/`$EDITOR`.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// Runs `$VISUAL`, else `$EDITOR`, else `vi` on `path` through `sh` (so an editor with
/// arguments such as `code --wait` works).
pub(crate) fn open_editor(path: &Path) -> Result<()> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .or_else(|| {
            std::env::var("EDITOR")
                .ok()
                .filter(|e| !e.trim().is_empty())
        })
        .unwrap_or_else(|| "vi".to_string());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("hermes-memory-edit")
        .arg(path)
        .status()
        .with_context(|| format!("starting the editor `{editor}`"))?;
    if !status.success() {
        bail!("the editor `{editor}` exited with {status}; the file was left as it is");
    }
    Ok(())
}
