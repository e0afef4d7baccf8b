//! The `file` toolset (FEATURES §4): `read_file`, `write_file`, `patch`, `search_files`.

mod patch;
mod read;
mod search;
mod write;

use std::sync::Arc;

use serde_json::Value;

use crate::tool::Tool;

pub use patch::{PatchOutcome, PatchTool, apply_patch};
pub use read::{
    DEFAULT_READ_LIMIT, MAX_LINE_CHARS, MAX_READ_LIMIT, ReadFileTool, SNIFF_BYTES,
    is_binary_prefix, page_of_text,
};
pub use search::{DEFAULT_MAX_RESULTS, SearchFilesTool};
pub use write::{WriteFileTool, atomic_write};

/// Toolset name of these tools.
pub const TOOLSET: &str = "file";

/// The `file` tools in their stable order: read_file, write_file, patch, search_files.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFileTool),
        Arc::new(WriteFileTool),
        Arc::new(PatchTool),
        Arc::new(SearchFilesTool),
    ]
}

/// A required string argument, or an error text for the model.
pub(crate) fn req_str<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!("argument `{name}` must be a string, got {other}")),
        None => Err(format!("missing required argument `{name}`")),
    }
}

/// An optional string argument (`null` counts as absent).
pub(crate) fn opt_str<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// An optional non-negative integer argument (`null` counts as absent).
pub(crate) fn opt_u64(args: &Value, name: &str) -> Result<Option<u64>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("argument `{name}` must be a non-negative integer, got {v}")),
    }
}

/// An optional boolean argument (`null` counts as absent).
pub(crate) fn opt_bool(args: &Value, name: &str) -> Result<Option<bool>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(format!("argument `{name}` must be a boolean, got {v}")),
    }
}
