//! The REPL's line editor (issue 9 item 7): reedline with history persisted in
//! `HERMES_HOME` (`history_file`), Ctrl-R reverse search (reedline's Emacs binding), Alt-Enter
//! for a newline (a line ending in `\` continues too; see `repl.rs`), Tab completion
//! ([`crate::repl::complete`]), and bracketed paste where a large paste shows as one placeholder
//! line (`[pasted text #1: 120 lines, 4512 chars]`) while the full text is what gets sent
//! ([`PasteBox::expand`]). `/prompt` composes a message in `$EDITOR` ([`compose_in_editor`]).

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use reedline::{
    ColumnarMenu, Completer, EditCommand, EditMode, Editor, Emacs, FileBackedHistory, KeyCode,
    KeyModifiers, Menu, MenuBuilder, MenuEvent, MenuSettings, Painter, PromptEditMode, Reedline,
    ReedlineEvent, ReedlineMenu, ReedlineRawEvent, Suggestion, default_emacs_keybindings,
};

use crate::repl::complete::{HermesCompleter, Sources};

/// How many lines the history file keeps.
const HISTORY_LINES: usize = 1000;

/// A paste with more lines than this is collapsed into a placeholder.
const PASTE_MAX_LINES: usize = 5;

/// A paste longer than this (in chars) is collapsed into a placeholder.
const PASTE_MAX_CHARS: usize = 800;

/// The completion menu's name (Tab opens it).
const COMPLETION_MENU: &str = "completion_menu";

/// Large pastes waiting to be sent, each behind its placeholder in the edited line.
#[derive(Debug, Clone, Default)]
pub struct PasteBox {
    inner: Arc<Mutex<Vec<(String, String)>>>,
}

impl PasteBox {
    /// Stores `body` and returns its placeholder when it is large (more than
    /// [`PASTE_MAX_LINES`] lines or [`PASTE_MAX_CHARS`] chars); `None` for a small paste,
    /// which is inserted as it is.
    pub fn collapse(&self, body: &str) -> Option<String> {
        let lines = body.lines().count();
        let chars = body.chars().count();
        if lines <= PASTE_MAX_LINES && chars <= PASTE_MAX_CHARS {
            return None;
        }
        let mut stored = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let placeholder = format!(
            "[pasted text #{}: {lines} lines, {chars} chars]",
            stored.len() + 1
        );
        stored.push((placeholder.clone(), body.to_string()));
        Some(placeholder)
    }

    /// `line` with every placeholder replaced by its pasted text; the stored pastes are
    /// then forgotten (each submitted line starts afresh).
    pub fn expand(&self, line: &str) -> String {
        let mut stored = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = line.to_string();
        for (placeholder, body) in stored.drain(..) {
            out = out.replacen(&placeholder, &body, 1);
        }
        out
    }
}

/// Emacs editing with large bracketed pastes collapsed into a placeholder.
struct PasteAwareEmacs {
    inner: Emacs,
    pastes: PasteBox,
}

impl EditMode for PasteAwareEmacs {
    fn parse_event(&mut self, event: ReedlineRawEvent) -> ReedlineEvent {
        let event: crossterm::event::Event = event.into();
        if let crossterm::event::Event::Paste(body) = &event {
            let body = body.replace("\r\n", "\n").replace('\r', "\n");
            if let Some(placeholder) = self.pastes.collapse(&body) {
                return ReedlineEvent::Edit(vec![EditCommand::InsertString(placeholder)]);
            }
        }
        match ReedlineRawEvent::try_from(event) {
            Ok(raw) => self.inner.parse_event(raw),
            Err(()) => ReedlineEvent::None,
        }
    }

    fn edit_mode(&self) -> PromptEditMode {
        self.inner.edit_mode()
    }
}

/// reedline's columnar completion menu, quiet when nothing matches (issue 20 item 10): Tab
/// with no completion draws nothing — no `NO RECORDS FOUND` box, no change of the prompt —
/// because the menu only counts as open while it has something to show. Everything else is
/// the columnar menu's own behaviour.
struct QuietMenu(ColumnarMenu);

impl QuietMenu {
    /// Nothing to show: the completer answered, with no suggestion.
    fn empty(&self) -> bool {
        self.0.get_values().is_empty() && !self.0.results_are_provisional()
    }
}

impl Menu for QuietMenu {
    fn settings(&self) -> &MenuSettings {
        self.0.settings()
    }
    fn is_active(&self) -> bool {
        self.0.is_active() && !self.empty()
    }
    fn set_active(&mut self, active: bool) {
        self.0.set_active(active)
    }
    fn clear_input(&mut self) {
        self.0.clear_input()
    }
    fn on_activate(&mut self) {
        self.0.on_activate()
    }
    fn on_deactivate(&mut self) {
        self.0.on_deactivate()
    }
    fn handle_menu_event(&mut self, event: &MenuEvent) {
        self.0.handle_menu_event(event)
    }
    fn menu_event(&mut self, event: MenuEvent) {
        self.0.menu_event(event)
    }
    fn can_quick_complete(&self) -> bool {
        self.0.can_quick_complete()
    }
    fn can_partially_complete(
        &mut self,
        values_updated: bool,
        editor: &mut Editor,
        completer: &mut dyn Completer,
    ) -> bool {
        self.0
            .can_partially_complete(values_updated, editor, completer)
    }
    fn update_values(&mut self, editor: &mut Editor, completer: &mut dyn Completer) {
        self.0.update_values(editor, completer)
    }
    fn reset_position(&mut self) {
        self.0.reset_position()
    }
    fn reload(&mut self, updated: bool, editor: &mut Editor, completer: &mut dyn Completer) {
        self.0.reload(updated, editor, completer)
    }
    fn update_working_details(
        &mut self,
        editor: &mut Editor,
        completer: &mut dyn Completer,
        painter: &Painter,
    ) {
        self.0.update_working_details(editor, completer, painter)
    }
    fn replace_in_buffer(&self, editor: &mut Editor) {
        self.0.replace_in_buffer(editor)
    }
    fn menu_required_lines(&self, terminal_columns: u16) -> u16 {
        if self.empty() {
            0
        } else {
            self.0.menu_required_lines(terminal_columns)
        }
    }
    fn menu_string(&self, available_lines: u16, use_ansi_coloring: bool) -> String {
        if self.empty() {
            String::new()
        } else {
            self.0.menu_string(available_lines, use_ansi_coloring)
        }
    }
    fn min_rows(&self) -> u16 {
        self.0.min_rows()
    }
    fn get_values(&self) -> &[Suggestion] {
        self.0.get_values()
    }
    fn results_are_provisional(&self) -> bool {
        self.0.results_are_provisional()
    }
    fn is_awaiting_first_answer(&self) -> bool {
        self.0.is_awaiting_first_answer()
    }
    fn is_visible(&self) -> bool {
        self.is_active() && !self.is_awaiting_first_answer()
    }
    fn set_cursor_pos(&mut self, pos: (u16, u16)) {
        self.0.set_cursor_pos(pos)
    }
}

/// The REPL's editor and the paste store its placeholders refer to; `marker` is the prompt
/// symbol, kept while the completion menu is open. History problems are reported on stderr
/// and leave the editor without history.
pub fn build_editor(history_file: &Path, sources: Sources, marker: &str) -> (Reedline, PasteBox) {
    let mut keybindings = default_emacs_keybindings();
    keybindings.add_binding(
        KeyModifiers::ALT,
        KeyCode::Enter,
        ReedlineEvent::Edit(vec![EditCommand::InsertNewline]),
    );
    keybindings.add_binding(
        KeyModifiers::NONE,
        KeyCode::Tab,
        ReedlineEvent::UntilFound(vec![
            ReedlineEvent::Menu(COMPLETION_MENU.to_string()),
            ReedlineEvent::MenuNext,
        ]),
    );
    let pastes = PasteBox::default();
    let mode = PasteAwareEmacs {
        inner: Emacs::new(keybindings),
        pastes: pastes.clone(),
    };
    let menu = QuietMenu(
        ColumnarMenu::default()
            .with_name(COMPLETION_MENU)
            .with_marker(marker),
    );
    let mut editor = Reedline::create()
        .with_edit_mode(Box::new(mode))
        .with_completer(Box::new(HermesCompleter::new(sources)))
        .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)))
        .with_quick_completions(true)
        .with_partial_completions(true)
        .use_bracketed_paste(true);
    // Owner-only before reedline opens it (it keeps the mode of an existing file).
    if let Err(e) = hermes_protocol::private_fs::open_append(history_file) {
        tracing::debug!(error = %e, "history file not prepared");
    }
    match FileBackedHistory::with_file(HISTORY_LINES, history_file.to_path_buf()) {
        Ok(history) => editor = editor.with_history(Box::new(history)),
        Err(e) => errln!("warning: input history disabled ({e})"),
    }
    (editor, pastes)
}

/// `/prompt [text]`: opens `$VISUAL`/`$EDITOR` (else `vi`) on a new file holding `initial`,
/// and returns what was saved, trimmed; `None` when it is empty (nothing is sent).
///
/// The file is created (0600, random name, `O_EXCL`) in `dir`, which the caller gives as a
/// folder of HERMES_HOME: not the temp directory, which every sandboxed command may write,
/// so a background command can neither plant a link at the name nor swap the text you
/// wrote before it is sent as yours.
///
/// # Errors
/// The folder or file cannot be created, the editor fails, or the file cannot be read back.
pub fn compose_in_editor(dir: &std::path::Path, initial: &str) -> Result<Option<String>> {
    hermes_protocol::private_fs::create_dir_all(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let mut file = tempfile::Builder::new()
        .prefix("hermes-prompt-")
        .suffix(".md")
        .tempfile_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    {
        use std::io::Write;
        file.write_all(initial.as_bytes())
            .and_then(|()| file.flush())
            .with_context(|| format!("writing {}", file.path().display()))?;
    }
    crate::views::editor::open_editor(file.path())?;
    let text = std::fs::read_to_string(file.path())
        .with_context(|| format!("reading {}", file.path().display()))?;
    let text = text.trim();
    Ok((!text.is_empty()).then(|| text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_pastes_stay_large_ones_collapse_and_expand_in_place() {
        let pastes = PasteBox::default();
        assert_eq!(pastes.collapse("one line"), None);
        let big: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let placeholder = pastes.collapse(&big).unwrap();
        assert_eq!(placeholder, "[pasted text #1: 40 lines, 311 chars]");
        let long = "x".repeat(900);
        let second = pastes.collapse(&long).unwrap();
        assert!(second.starts_with("[pasted text #2: 1 lines, 900 chars]"));
        let line = format!("summarize {placeholder} and {second}");
        assert_eq!(pastes.expand(&line), format!("summarize {big} and {long}"));
        // Forgotten after one submission.
        assert_eq!(pastes.expand(&placeholder), placeholder);
    }

    #[test]
    fn a_collapsed_paste_event_inserts_the_placeholder() {
        let pastes = PasteBox::default();
        let mut mode = PasteAwareEmacs {
            inner: Emacs::new(default_emacs_keybindings()),
            pastes: pastes.clone(),
        };
        let body = "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng".to_string();
        let raw = ReedlineRawEvent::try_from(crossterm::event::Event::Paste(body)).unwrap();
        match mode.parse_event(raw) {
            ReedlineEvent::Edit(cmds) => assert_eq!(
                format!("{cmds:?}"),
                format!(
                    "{:?}",
                    vec![EditCommand::InsertString(
                        "[pasted text #1: 7 lines, 13 chars]".into()
                    )]
                )
            ),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            pastes.expand("[pasted text #1: 7 lines, 13 chars]"),
            "a\nb\nc\nd\ne\nf\ng"
        );
    }
}
