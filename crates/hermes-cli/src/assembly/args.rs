//! The flags that choose how an agent is assembled (model, provider, toolsets, session to
//! resume, budget, prompt profile). Every entry point takes them: the REPL, `chat -q`, cron
//! runs and the gateway; `commands::args` flattens them into the top-level `hermes` parser.

use clap::{Args, ValueEnum};

/// Options of a conversation (REPL or `chat`).
#[derive(Debug, Clone, Args, Default)]
pub struct ChatArgs {
    /// Model name (overrides config.yaml `model`).
    #[arg(short = 'm', long, global = true)]
    pub model: Option<String>,
    /// Provider id or alias (openrouter, openai, custom, local, …).
    #[arg(long, global = true)]
    pub provider: Option<String>,
    /// Base URL of an OpenAI-compatible endpoint (implies provider `custom`).
    #[arg(long, global = true)]
    pub base_url: Option<String>,
    /// Toolsets to enable, comma-separated (default: config `toolsets`, else `hermes-cli`).
    #[arg(short = 't', long, value_delimiter = ',', global = true)]
    pub toolsets: Option<Vec<String>>,
    /// Skills to preload into the first user message, comma-separated.
    #[arg(short = 's', long, value_delimiter = ',', global = true)]
    pub skills: Option<Vec<String>>,
    /// Resume a session by id, title or unique id prefix.
    #[arg(short = 'r', long, global = true)]
    pub resume: Option<String>,
    /// Continue the most recent CLI session.
    #[arg(short = 'c', long = "continue", global = true)]
    pub continue_last: bool,
    /// Iteration budget per turn (default: config `agent.max_turns`, else 90).
    #[arg(long, global = true)]
    pub max_turns: Option<u32>,
    /// Run dangerous commands without asking (hard-line commands stay blocked).
    #[arg(long, global = true)]
    pub yolo: bool,
    /// Write AgentEvents as JSON lines on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// Profile name: uses `~/.hermes/profiles/NAME`.
    #[arg(short = 'p', long, global = true)]
    pub profile: Option<String>,
    /// Verbose logs on stderr.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// Less output: no tool lines or status lines.
    #[arg(short = 'Q', long, global = true)]
    pub quiet: bool,
    /// System prompt profile: `full`, or `compact` for small local context windows
    /// (default: compact for the local provider, full otherwise).
    #[arg(long, global = true, value_enum)]
    pub prompt_profile: Option<PromptProfileArg>,
}

/// `--prompt-profile` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PromptProfileArg {
    /// Every layer.
    Full,
    /// Short identity and guidance for small context windows.
    Compact,
}
