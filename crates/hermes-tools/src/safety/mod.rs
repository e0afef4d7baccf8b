//! Safety checks for tools (FEATURES §4): dangerous-command classification and the write
//! deny-list. Pure functions with no I/O except path canonicalization.

mod command;
mod paths;
mod split;

pub use command::{CommandSafety, classify_command, dangerous_reason, hardline_reason};
pub(crate) use paths::{canonicalize_lenient, lexical_normalize};
pub use paths::{
    check_write_path, check_write_path_in, is_key_material_name, is_same_file_as_any,
    open_no_symlinks,
};
