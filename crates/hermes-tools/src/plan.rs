//! The parallel planner for one batch of tool calls (FEATURES §3; vectors/path_overlap.json).
//!
//! A batch is split into ordered segments. Calls are added to the open segment while they
//! are compatible with every call in it: [`Parallelism::Safe`] tools and reads never
//! conflict; a write conflicts with a read or write of an overlapping canonical path. A
//! conflicting call joins the open segment, which then runs sequentially and is closed.
//! [`Parallelism::Never`] tools, unknown tools and calls whose arguments did not parse (or
//! lack the path argument) run alone. A segment of one call is sequential. Results are
//! always reported in call order by the executor.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::safety::canonicalize_lenient;
use crate::tool::{Access, Parallelism};

/// Most calls of one parallel segment that run at the same time (FEATURES §3).
pub const MAX_PARALLEL_WORKERS: usize = 8;

/// One call of a batch as the planner sees it.
#[derive(Debug, Clone, Copy)]
pub struct BatchCall<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Parsed arguments; `None` when the model's argument text was not valid JSON.
    pub args: Option<&'a Value>,
}

/// How a segment runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentKind {
    /// All calls at once (at most [`MAX_PARALLEL_WORKERS`] concurrently).
    Parallel,
    /// One after another, in order.
    Sequential,
}

/// An ordered group of call indices (into the batch) and how they run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Parallel or sequential.
    pub kind: SegmentKind,
    /// Indices into the batch, ascending.
    pub calls: Vec<usize>,
}

/// True when one canonical path is a component-wise prefix of the other (`/a/b` and
/// `/a/b/c.txt` overlap; `/a/b.txt` and `/a/bc.txt` do not).
pub fn paths_overlap(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The path a call touches and how, resolved against `cwd` and canonicalized (a path that
/// does not exist yet goes through its nearest existing parent).
fn access_of(p: Parallelism, args: &Value, cwd: &Path) -> Option<Option<(PathBuf, Access)>> {
    match p {
        Parallelism::Safe => Some(None),
        Parallelism::Never => None,
        Parallelism::PathScoped { arg, access } => {
            let raw = args.get(arg)?.as_str()?;
            let path = Path::new(raw);
            let joined = if path.is_absolute() {
                path.to_path_buf()
            } else {
                cwd.join(path)
            };
            let canonical = canonicalize_lenient(&joined).unwrap_or(joined);
            Some(Some((canonical, access)))
        }
    }
}

fn conflicts(a: &(PathBuf, Access), b: &(PathBuf, Access)) -> bool {
    (a.1 == Access::Write || b.1 == Access::Write) && paths_overlap(&a.0, &b.0)
}

/// Splits a batch into ordered segments (see the module docs). `parallelism_of` gives a
/// tool's [`Parallelism`] by name (`None` for unknown tools); relative paths resolve
/// against `cwd`.
pub fn plan_batch(
    calls: &[BatchCall<'_>],
    parallelism_of: impl Fn(&str) -> Option<Parallelism>,
    cwd: &Path,
) -> Vec<Segment> {
    let mut out = Vec::new();
    // Open segment: indices and the paths they touch.
    let mut open: Vec<usize> = Vec::new();
    let mut touched: Vec<(PathBuf, Access)> = Vec::new();
    let flush = |out: &mut Vec<Segment>, open: &mut Vec<usize>, kind: SegmentKind| {
        if open.is_empty() {
            return;
        }
        let kind = if open.len() == 1 {
            SegmentKind::Sequential
        } else {
            kind
        };
        out.push(Segment {
            kind,
            calls: std::mem::take(open),
        });
    };
    for (i, call) in calls.iter().enumerate() {
        let access = match (parallelism_of(call.name), call.args) {
            (Some(p), Some(args)) => access_of(p, args, cwd),
            _ => None,
        };
        let Some(access) = access else {
            flush(&mut out, &mut open, SegmentKind::Parallel);
            touched.clear();
            out.push(Segment {
                kind: SegmentKind::Sequential,
                calls: vec![i],
            });
            continue;
        };
        let conflict = access
            .as_ref()
            .is_some_and(|a| touched.iter().any(|t| conflicts(a, t)));
        open.push(i);
        if conflict {
            flush(&mut out, &mut open, SegmentKind::Sequential);
            touched.clear();
        } else if let Some(a) = access {
            touched.push(a);
        }
    }
    flush(&mut out, &mut open, SegmentKind::Parallel);
    out
}
