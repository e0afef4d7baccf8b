//! Terminal display settings of one CLI process, from `config.yaml` `display:` and flags:
//! the skin, the render options, the status-line toggle; plus the REPL's `/skin` and
//! `/statusbar` commands, the banner and the status line after each answer.

use std::path::PathBuf;

use hermes_protocol::HermesHome;
use hermes_protocol::config::DisplayConfig;

use crate::render::progress::{ToolProgress, fill_template};
use crate::render::skin::Skin;
use crate::render::status::{StatusBar, status_line};
use crate::render::style::{Span, Style, encode_line, truncate};
use crate::render::{RenderMode, RenderOptions, Renderer, TurnSummary};

/// Display settings in force.
pub struct Display {
    /// Render options (terminal capabilities, modes).
    pub opts: RenderOptions,
    /// The skin picked by `display.skin` (or `default`).
    pub skin: Skin,
    /// Whether the REPL shows the status line after each answer.
    pub statusbar: bool,
    /// `HERMES_HOME/skins`.
    pub skins_dir: PathBuf,
}

impl Display {
    /// Settings from `display:` and the `-Q`/`-v` flags (`-v` also shows reasoning). Returns
    /// them with warnings to print (a bad `tool_progress`, a broken skin file).
    pub fn load(
        home: &HermesHome,
        cfg: &DisplayConfig,
        quiet: bool,
        verbose: bool,
    ) -> (Display, Vec<String>) {
        let mut warnings = Vec::new();
        let tool_progress = ToolProgress::parse(cfg.tool_progress.as_deref()).unwrap_or_else(|e| {
            warnings.push(format!("{e}; using `all`"));
            ToolProgress::All
        });
        let show_reasoning = verbose || cfg.show_reasoning.unwrap_or(false);
        let opts = RenderOptions::detect(quiet, show_reasoning, tool_progress);
        let skins_dir = skins_dir(home);
        let (skin, skin_warnings) = Skin::load_or_default(&skins_dir, cfg.skin.as_deref());
        warnings.extend(skin_warnings);
        (
            Display {
                opts,
                skin,
                statusbar: cfg.statusbar.unwrap_or(true),
                skins_dir,
            },
            warnings,
        )
    }

    /// A renderer on stdout/stderr with these settings.
    pub fn renderer(&self, mode: RenderMode) -> Renderer {
        Renderer::new(mode, self.opts, self.skin.clone())
    }
}

/// `HERMES_HOME/skins`.
pub fn skins_dir(home: &HermesHome) -> PathBuf {
    home.root().join("skins")
}

/// The banner of `skin` with its placeholders filled, one line per banner line.
pub fn banner(skin: &Skin, model: &str, provider: &str, session: &str, color: bool) -> String {
    let c = &skin.colors;
    let mut out = Vec::new();
    for line in skin.banner.lines() {
        let spans = fill_template(line, |key| match key {
            "agent" => Some(Span::new(
                &skin.agent_name,
                Style::fg(c.banner_title).bold(),
            )),
            "version" => Some(Span::new(
                env!("CARGO_PKG_VERSION"),
                Style::fg(c.banner_title),
            )),
            "model" => Some(Span::new(model, Style::fg(c.banner_text))),
            "provider" => Some(Span::new(provider, Style::fg(c.banner_text))),
            "session" => Some(Span::new(session, Style::fg(c.banner_dim))),
            _ => None,
        });
        // Literal banner text takes the banner's dim color.
        let spans: Vec<Span> = spans
            .into_iter()
            .map(|mut s| {
                if s.style == Style::default() {
                    s.style = Style::fg(c.banner_dim);
                }
                s
            })
            .collect();
        out.push(encode_line(&spans, color));
    }
    out.join("\n")
}

/// `/skin [name]`: without a name lists the skins (marking the current one); with a name
/// switches the renderer to it. Returns the text to show.
pub fn skin_command(display: &mut Display, renderer: &mut Renderer, arg: &str) -> String {
    let arg = arg.trim();
    if arg.is_empty() {
        let current = renderer.skin().name.clone();
        let mut lines = vec![
            "Skins (/skin <name> to switch; display.skin in config.yaml to keep):".to_string(),
        ];
        for name in Skin::available(&display.skins_dir) {
            let mark = if name == current { "*" } else { " " };
            let desc = Skin::load(&display.skins_dir, &name)
                .map(|(s, _)| s.description)
                .unwrap_or_else(|e| format!("(broken: {e})"));
            lines.push(format!(" {mark} {name:<12} {}", truncate(&desc, 60)));
        }
        return lines.join("\n");
    }
    match Skin::load(&display.skins_dir, arg) {
        Ok((skin, warnings)) => {
            let mut text = warnings;
            text.push(format!("skin: {}", skin.name));
            display.skin = skin.clone();
            renderer.set_skin(skin);
            text.join("\n")
        }
        Err(e) => format!("{e}; keeping the `{}` skin", renderer.skin().name),
    }
}

/// `/statusbar`: toggles the status line. Returns the text to show.
pub fn statusbar_command(display: &mut Display) -> String {
    display.statusbar = !display.statusbar;
    if display.statusbar {
        "status line on".into()
    } else {
        "status line off".into()
    }
}

/// The status line after a turn, encoded for the terminal.
pub fn status_after_turn(
    renderer: &Renderer,
    turn: &TurnSummary,
    model: &str,
    provider: &str,
    context_window: Option<u64>,
    cost_usd: Option<f64>,
) -> String {
    let bar = StatusBar {
        model: model.to_string(),
        provider: provider.to_string(),
        context_tokens: turn.context_tokens(),
        context_window,
        cost_usd,
        elapsed_ms: turn.elapsed_ms,
    };
    encode_line(
        &status_line(renderer.skin(), &bar, renderer.width().saturating_sub(1)),
        renderer.color(),
    )
}
