//! Renders [`AgentEvent`]s for a terminal or a script: answer text on stdout, progress on
//! stderr (FEATURES §1 CLI), or one JSON object per line with `--json` (ARCHITECTURE §3).

use std::collections::HashMap;
use std::io::{IsTerminal, Write};

use hermes_protocol::{AgentEvent, TurnOutcome};

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderMode {
    /// JSONL on stdout, nothing else.
    Json,
    /// Answer text streamed to stdout as it arrives.
    Stream,
    /// Only the final answer on stdout, at the end (stdout is not a terminal).
    FinalOnly,
}

/// Writes events to stdout/stderr.
pub struct Renderer {
    mode: RenderMode,
    quiet: bool,
    verbose: bool,
    color: bool,
    mid_line: bool,
    tools: HashMap<String, (String, String)>,
}

impl Renderer {
    /// A renderer; `quiet` hides tool and status lines, `verbose` shows reasoning.
    pub fn new(mode: RenderMode, quiet: bool, verbose: bool) -> Renderer {
        let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        Renderer {
            mode,
            quiet,
            verbose,
            color,
            mid_line: false,
            tools: HashMap::new(),
        }
    }

    /// Picks `Stream` when stdout is a terminal, else `FinalOnly`; `Json` when asked.
    pub fn auto_mode(json: bool) -> RenderMode {
        if json {
            RenderMode::Json
        } else if std::io::stdout().is_terminal() {
            RenderMode::Stream
        } else {
            RenderMode::FinalOnly
        }
    }

    fn dim(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[2m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    fn end_text_line(&mut self) {
        if self.mid_line {
            let mut out = std::io::stdout();
            let _ = writeln!(out);
            let _ = out.flush();
            self.mid_line = false;
        }
    }

    fn status_line(&mut self, line: &str) {
        if self.quiet {
            return;
        }
        self.end_text_line();
        let line = self.dim(line);
        let _ = writeln!(std::io::stderr(), "{line}");
    }

    /// Shows one event.
    pub fn handle(&mut self, event: &AgentEvent) {
        if self.mode == RenderMode::Json {
            if let Ok(line) = serde_json::to_string(event) {
                let mut out = std::io::stdout();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            return;
        }
        match event {
            AgentEvent::TurnStarted { .. } => {}
            AgentEvent::TextDelta { text } => {
                if self.mode == RenderMode::Stream && !text.is_empty() {
                    let mut out = std::io::stdout();
                    let _ = write!(out, "{text}");
                    let _ = out.flush();
                    self.mid_line = !text.ends_with('\n');
                }
            }
            AgentEvent::ReasoningDelta { text } => {
                if self.verbose {
                    let t = self.dim(text);
                    let _ = write!(std::io::stderr(), "{t}");
                }
            }
            AgentEvent::ToolStarted {
                call_id,
                name,
                args_preview,
            } => {
                self.end_text_line();
                self.tools
                    .insert(call_id.clone(), (name.clone(), args_preview.clone()));
            }
            AgentEvent::ToolProgress { message, .. } => self.status_line(&format!("  {message}")),
            AgentEvent::ToolFinished {
                call_id,
                ok,
                preview,
                duration_ms,
            } => {
                let (name, args) = self.tools.remove(call_id).unwrap_or_default();
                let secs = *duration_ms as f64 / 1000.0;
                let mut line = format!("▸ {name} {args}  {secs:.2}s");
                if !ok {
                    line.push_str(&format!("  ✗ {preview}"));
                }
                self.status_line(&line);
            }
            AgentEvent::Status { message } => self.status_line(&format!("· {message}")),
            AgentEvent::TurnFinished {
                outcome,
                final_text,
                ..
            } => {
                match (outcome, self.mode) {
                    (TurnOutcome::Failed, _) => {
                        self.end_text_line();
                        let _ = writeln!(std::io::stderr(), "error: {final_text}");
                    }
                    (TurnOutcome::Interrupted, _) => self.status_line("· interrupted"),
                    (_, RenderMode::FinalOnly) => {
                        let mut out = std::io::stdout();
                        let _ = writeln!(out, "{}", final_text.trim_end());
                        let _ = out.flush();
                    }
                    _ => {}
                }
                self.end_text_line();
            }
        }
    }
}
