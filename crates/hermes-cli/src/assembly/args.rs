//! The flags that choose how an agent is assembled (model, provider, toolsets, session to
//! resume, budget, prompt profile). Every entry point takes them: the REPL, `chat -q`, cron
//! runs and the gateway; `commands::args` puts them on `hermes` itself and on `hermes chat`
//! (issue 20 item 7: not on the other subcommands, whose `--help` shows only their own).

use clap::{Args, ValueEnum};

/// Options of a conversation (REPL or `chat`).
#[derive(Debug, Clone, Args, Default)]
pub struct ChatArgs {
    /// Model name (overrides config.yaml `model`).
    #[arg(short = 'm', long)]
    pub model: Option<String>,
    /// Provider id or alias (openrouter, openai, custom, local, …).
    #[arg(long)]
    pub provider: Option<String>,
    /// Base URL of an OpenAI-compatible endpoint (implies provider `custom`).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Toolsets to enable, comma-separated (default: config `toolsets`, else `hermes-cli`).
    #[arg(short = 't', long, value_delimiter = ',')]
    pub toolsets: Option<Vec<String>>,
    /// Skills to preload into the first user message, comma-separated.
    #[arg(short = 's', long, value_delimiter = ',')]
    pub skills: Option<Vec<String>>,
    /// Resume a session by id, title or unique id prefix.
    #[arg(short = 'r', long)]
    pub resume: Option<String>,
    /// Continue the most recent CLI session.
    #[arg(short = 'c', long = "continue")]
    pub continue_last: bool,
    /// Iteration budget per turn (default: config `agent.max_turns`, else 90).
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// Run dangerous commands without asking (hard-line commands stay blocked).
    #[arg(long)]
    pub yolo: bool,
    /// Write AgentEvents as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
    /// Show the model's reasoning (as `display.show_reasoning: true`); commands that are not
    /// a conversation (gateway, cron, mcp test) also log INFO records on stderr. Logs never
    /// reach the REPL's or `chat`'s screen: they are in HERMES_HOME/logs/ (`hermes logs`).
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Less output: no tool lines or status lines.
    #[arg(short = 'Q', long)]
    pub quiet: bool,
    /// System prompt profile: `full`, or `compact` for small local context windows
    /// (default: compact for the local provider, full otherwise).
    #[arg(long, value_enum)]
    pub prompt_profile: Option<PromptProfileArg>,
}

impl ChatArgs {
    /// These flags with `sub`'s given on top (`hermes -c chat -q …`: the flags before
    /// `chat` and after it both count; a value given after wins).
    pub fn overlay(&self, sub: &ChatArgs) -> ChatArgs {
        ChatArgs {
            model: sub.model.clone().or_else(|| self.model.clone()),
            provider: sub.provider.clone().or_else(|| self.provider.clone()),
            base_url: sub.base_url.clone().or_else(|| self.base_url.clone()),
            toolsets: sub.toolsets.clone().or_else(|| self.toolsets.clone()),
            skills: sub.skills.clone().or_else(|| self.skills.clone()),
            resume: sub.resume.clone().or_else(|| self.resume.clone()),
            continue_last: self.continue_last || sub.continue_last,
            max_turns: sub.max_turns.or(self.max_turns),
            yolo: self.yolo || sub.yolo,
            json: self.json || sub.json,
            verbose: self.verbose || sub.verbose,
            quiet: self.quiet || sub.quiet,
            prompt_profile: sub.prompt_profile.or(self.prompt_profile),
        }
    }
}

/// The model choice of a subcommand that records one (`cron create`, `model set`,
/// `setup --non-interactive`).
#[derive(Debug, Clone, Args, Default)]
pub struct ModelFlags {
    /// Model name.
    #[arg(short = 'm', long)]
    pub model: Option<String>,
    /// Provider id or alias (openrouter, openai, custom, local, …).
    #[arg(long)]
    pub provider: Option<String>,
    /// Base URL of an OpenAI-compatible endpoint (implies provider `custom`).
    #[arg(long)]
    pub base_url: Option<String>,
}

impl ModelFlags {
    /// `args` with these flags on top of its own model, provider and base URL.
    pub fn over(&self, args: &ChatArgs) -> ChatArgs {
        let mut out = args.clone();
        if self.model.is_some() {
            out.model = self.model.clone();
        }
        if self.provider.is_some() {
            out.provider = self.provider.clone();
        }
        if self.base_url.is_some() {
            out.base_url = self.base_url.clone();
        }
        out
    }
}

/// `--prompt-profile` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PromptProfileArg {
    /// Every layer.
    Full,
    /// Short identity and guidance for small context windows.
    Compact,
}
