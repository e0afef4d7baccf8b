//! "Tree T minus paths P" as a set of Landlock rules.
//!
//! Landlock is allow-list based and a rule on a directory covers everything beneath it, so a
//! sub-path of an allowed tree cannot be denied. To allow `T` except `P`, [`tree_minus`]
//! walks from `T` down towards every excluded path: a directory that is (or contains the
//! parent of) an excluded path is an *ancestor* and gets no rule of its own; each of its
//! children that is neither excluded nor an ancestor gets a rule for its whole subtree.
//!
//! Consequences, which the sandbox documents: entries cannot be created, removed or renamed
//! directly inside an ancestor directory (a write rule there would also cover the excluded
//! path, and would let `rm` + re-create replace it), while existing files and every other
//! subdirectory stay fully usable. Symbolic links among the children get no rule (a rule is
//! opened through the link and would cover its target, wherever it points).

use std::path::{Path, PathBuf};

/// One rule of a [`tree_minus`] result.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grant {
    /// The whole subtree at this path (a directory or a single file).
    Subtree(PathBuf),
    /// An ancestor directory of an excluded path: only rights that are harmless to extend
    /// over the excluded paths beneath may be given here (listing directories, for reads).
    Ancestor(PathBuf),
}

impl Grant {
    /// The path the rule is attached to.
    pub fn path(&self) -> &Path {
        match self {
            Grant::Subtree(p) | Grant::Ancestor(p) => p,
        }
    }
}

/// True when `path` is `base` or lies beneath it (component-wise, no file-system access).
pub fn is_within(path: &Path, base: &Path) -> bool {
    path.starts_with(base)
}

/// The rules that allow the tree at `root` except the trees at `excluded`, computed against
/// the file system as it is now. All paths must be absolute and canonical (symlinks resolved;
/// excluded paths that do not exist yet are fine: their nearest existing parent is an
/// ancestor, so they cannot be created).
///
/// Returns no rule when `root` is excluded (or lies inside an excluded tree) or does not
/// exist, `[Subtree(root)]` when nothing excluded lies beneath it, and otherwise one
/// [`Grant::Ancestor`] per ancestor directory plus a [`Grant::Subtree`] per other child, in
/// a stable order. Children that cannot be listed are left out (denied), never widened.
pub fn tree_minus(root: &Path, excluded: &[PathBuf]) -> Vec<Grant> {
    let mut out = Vec::new();
    walk(root, excluded, &mut out);
    out
}

fn walk(node: &Path, excluded: &[PathBuf], out: &mut Vec<Grant>) {
    if excluded.iter().any(|e| is_within(node, e)) {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(node) else {
        return;
    };
    let has_excluded_beneath = excluded.iter().any(|e| is_within(e, node) && e != node);
    if !has_excluded_beneath {
        out.push(Grant::Subtree(node.to_path_buf()));
        return;
    }
    if !meta.is_dir() {
        return;
    }
    out.push(Grant::Ancestor(node.to_path_buf()));
    let Ok(entries) = std::fs::read_dir(node) else {
        return;
    };
    let mut children: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    children.sort();
    for child in children {
        match std::fs::symlink_metadata(&child) {
            Ok(m) if m.file_type().is_symlink() => continue,
            Ok(_) => walk(&child, excluded, out),
            Err(_) => continue,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["a/b/c", "a/x", "h/.ssh", "h/proj"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in ["a/b/c/secret", "a/b/keep", "a/file", "h/.bashrc", "h/notes"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink(root.join("a/b/c/secret"), root.join("a/b/link")).unwrap();
        (dir, root)
    }

    #[test]
    fn nothing_excluded_beneath_is_one_rule() {
        let (_d, root) = setup();
        let g = tree_minus(&root.join("a/x"), &[root.join("a/b/c/secret")]);
        assert_eq!(g, vec![Grant::Subtree(root.join("a/x"))]);
    }

    #[test]
    fn excluded_root_and_root_inside_excluded_give_nothing() {
        let (_d, root) = setup();
        assert!(tree_minus(&root.join("a/b"), &[root.join("a/b")]).is_empty());
        assert!(tree_minus(&root.join("a/b/c"), &[root.join("a")]).is_empty());
        assert!(tree_minus(&root.join("missing"), &[]).is_empty());
    }

    #[test]
    fn enumerates_siblings_along_the_path_and_skips_symlinks() {
        let (_d, root) = setup();
        let g = tree_minus(&root, &[root.join("a/b/c/secret")]);
        assert_eq!(
            g,
            vec![
                Grant::Ancestor(root.clone()),
                Grant::Ancestor(root.join("a")),
                Grant::Ancestor(root.join("a/b")),
                Grant::Ancestor(root.join("a/b/c")),
                Grant::Subtree(root.join("a/b/keep")),
                Grant::Subtree(root.join("a/file")),
                Grant::Subtree(root.join("a/x")),
                Grant::Subtree(root.join("h")),
            ]
        );
        // No grant covers the secret, and none is opened through the symlink.
        for grant in &g {
            if let Grant::Subtree(p) = grant {
                assert!(!is_within(&root.join("a/b/c/secret"), p), "{p:?}");
                assert_ne!(p, &root.join("a/b/link"));
            }
        }
    }

    #[test]
    fn missing_excluded_paths_make_their_parent_an_ancestor() {
        let (_d, root) = setup();
        let excluded = [
            root.join("h/.bashrc"),
            root.join("h/.zshrc"),
            root.join("h/.ssh"),
            root.join("h/.config/systemd"),
        ];
        let g = tree_minus(&root.join("h"), &excluded);
        assert_eq!(
            g,
            vec![
                Grant::Ancestor(root.join("h")),
                Grant::Subtree(root.join("h/notes")),
                Grant::Subtree(root.join("h/proj")),
            ]
        );
    }
}
