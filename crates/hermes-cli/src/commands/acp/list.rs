//! `session/list` (ACP v1): the editor sessions an ACP client can offer to load — the stored
//! sessions whose source is `acp` and that hold at least one message, newest first (by start
//! time), [`PAGE_SIZE`] a page, only those of one working directory when the client names
//! it. As in Python Hermes' `acp_adapter`: the cursor is the id of the last session of the
//! previous page (an unknown cursor gives an empty page, never the list from the start), and
//! a session without a title is named by its first user message, else by its directory.

use std::path::{Component, Path, PathBuf};

use agent_client_protocol::v1::schema::{ListSessionsResponse, SessionInfo};
use hermes_store::{SessionRecord, SessionStore, StoreError};

use crate::assembly::ACP_PLATFORM;

/// Sessions per page (Python Hermes' `_LIST_SESSIONS_PAGE_SIZE`).
pub(super) const PAGE_SIZE: usize = 50;

/// Rows read from the store at a time while filtering.
const SCAN: usize = 200;

/// One page of the sessions of `cwd` (all directories when `None`) after `cursor`.
///
/// Errors: the store's, when it cannot be read.
pub(super) fn page(
    store: &SessionStore,
    cwd: Option<&Path>,
    cursor: Option<&str>,
) -> Result<ListSessionsResponse, StoreError> {
    let wanted = cwd.map(normalized);
    // Until the cursor's session is passed, rows are skipped.
    let mut after_cursor = cursor.is_none();
    let mut found: Vec<(SessionRecord, PathBuf)> = Vec::new();
    let mut offset = 0;
    'scan: loop {
        let rows = store.list_sessions(SCAN, offset)?;
        let done = rows.len() < SCAN;
        offset += rows.len();
        for record in rows {
            if !after_cursor {
                after_cursor = Some(record.id.as_str()) == cursor;
                continue;
            }
            let Some(dir) = listed_dir(&record) else {
                continue;
            };
            if wanted.as_ref().is_some_and(|w| *w != normalized(&dir)) {
                continue;
            }
            found.push((record, dir));
            // One more than a page says whether another page follows.
            if found.len() > PAGE_SIZE {
                break 'scan;
            }
        }
        if done {
            break;
        }
    }
    let more = found.len() > PAGE_SIZE;
    found.truncate(PAGE_SIZE);
    let mut sessions = Vec::with_capacity(found.len());
    for (record, dir) in &found {
        let updated = store
            .last_activity(&record.id)?
            .unwrap_or(record.started_at)
            .to_rfc3339();
        sessions.push(
            SessionInfo::new(record.id.clone(), dir.clone())
                .title(title(record, dir))
                .updated_at(updated),
        );
    }
    let next = more
        .then(|| found.last().map(|(r, _)| r.id.clone()))
        .flatten();
    Ok(ListSessionsResponse::new(sessions).next_cursor(next))
}

/// The directory a session is listed under: an editor session with messages and an absolute
/// working directory (what `session/load` needs); `None` for any other.
fn listed_dir(record: &SessionRecord) -> Option<PathBuf> {
    if record.source != ACP_PLATFORM || record.message_count == 0 {
        return None;
    }
    let dir = PathBuf::from(record.cwd.as_deref()?);
    dir.is_absolute().then_some(dir)
}

/// `path` with `.` components and trailing separators gone (`/a/./b/` is `/a/b`), for
/// comparing directories as the client and the store spell them.
fn normalized(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// The session's title, else its first user message, else its directory's name, else
/// `New thread` (Python Hermes' `_build_session_title`).
fn title(record: &SessionRecord, dir: &Path) -> String {
    let set = |s: Option<&str>| s.map(str::trim).filter(|s| !s.is_empty()).map(String::from);
    set(record.title.as_deref())
        .or_else(|| set(record.preview.as_deref()))
        .or_else(|| {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| "New thread".to_string())
}
