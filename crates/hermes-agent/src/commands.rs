//! The slash-command registry shared by every front end (FEATURES §1 CLI "one registry shared
//! with the gateway"; issue 7 item 6).
//!
//! One table ([`COMMANDS`]) says, for each command, its name, aliases, argument shape, one-line
//! help and the surfaces ([`Surface`]) that serve it. From it come the one parser
//! ([`parse`]), the `/help` text per surface ([`help_text`]) and completion candidates
//! ([`complete`]). Front ends dispatch on [`CommandId`]; what a command *does* stays in the
//! front end.
//!
//! Adding a command: a [`CommandId`] variant and one [`CommandSpec`] entry in [`COMMANDS`];
//! then a handler in each surface that lists it (the compiler points at every `match`).

use std::fmt;

mod instead;

pub use instead::{instead, unknown_message};

/// Where a command is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Surface {
    /// The interactive terminal REPL (`hermes`).
    Cli,
    /// Chats served by the messaging gateway (Telegram, Discord, Slack, webhook).
    Gateway,
}

impl Surface {
    /// `cli` or `gateway` (used in messages).
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Cli => "cli",
            Surface::Gateway => "gateway",
        }
    }

    /// Where the user meets this surface, for "only available in …" messages.
    fn place(self) -> &'static str {
        match self {
            Surface::Cli => "the terminal (hermes)",
            Surface::Gateway => "chats served by the gateway",
        }
    }
}

/// Surfaces serving a command.
pub const BOTH: &[Surface] = &[Surface::Cli, Surface::Gateway];
/// Only the terminal REPL.
pub const CLI_ONLY: &[Surface] = &[Surface::Cli];
/// Only gateway chats.
pub const GATEWAY_ONLY: &[Surface] = &[Surface::Gateway];

/// Every command the registry knows. Front ends `match` on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandId {
    /// `/new` (`/reset`): end the session and start a fresh one.
    New,
    /// `/retry`: remove the last turn and send its message again.
    Retry,
    /// `/undo [N]`: remove the last N turns.
    Undo,
    /// `/sessions`: recent sessions.
    Sessions,
    /// `/resume <id|title>`: switch to a stored session.
    Resume,
    /// `/status`: session, model, running and queued work.
    Status,
    /// `/usage`: tokens used in this session.
    Usage,
    /// `/model [name]`: the model in use (switching where the surface supports it).
    Model,
    /// `/compress [focus]`: summarize the middle of the conversation now.
    Compress,
    /// `/memory`: memory entries and usage.
    Memory,
    /// `/skills`: installed skills.
    Skills,
    /// `/cron`: scheduled jobs.
    Cron,
    /// `/stop`: interrupt the running turn and drop queued messages.
    Stop,
    /// `/approve [session]`: run the dangerous command waiting for approval.
    Approve,
    /// `/deny`: refuse the dangerous command waiting for approval.
    Deny,
    /// `/sethome`: make this chat the platform's home channel (cron deliveries).
    SetHome,
    /// `/skin [name]`: list skins, or switch to one.
    Skin,
    /// `/statusbar` (`/sb`): show or hide the status line after answers.
    Statusbar,
    /// `/prompt [text]`: write the message in `$EDITOR` (starting from `text`), then send it.
    Prompt,
    /// `/help`: the command list of this surface.
    Help,
    /// `/quit` (`/exit`, `/q`): leave the REPL.
    Quit,
    /// `/title [name]`: show or set the session's title.
    Title,
    /// `/insights [days]`: usage of the last days from the session store.
    Insights,
    /// `/personality [name]`: list the SOUL presets, or switch SOUL.md to one.
    Personality,
    /// `/platforms` (`/gateway`): the gateway's platforms and whether they are set up.
    Platforms,
    /// `/version`: the hermes version.
    Version,
    /// `/config`: where the settings are and the main ones in force.
    Config,
    /// `/toolsets`: the enabled toolsets and the tools they give.
    Toolsets,
    /// `/history`: the conversation so far.
    History,
    /// `/clear`: clear the screen and start a new session.
    Clear,
}

/// What a command accepts after its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgSpec {
    /// Nothing; any text after the name is an error.
    None,
    /// An optional positive whole number (default 1), e.g. `/undo 3`.
    Count,
    /// Optional free text, e.g. `/compress the API design`.
    OptionalText,
    /// Required free text, e.g. `/resume <id>`.
    RequiredText,
    /// Optionally one of these words (case-insensitive), e.g. `/approve session`.
    OptionalWord(&'static [&'static str]),
}

/// One registry entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// What front ends dispatch on.
    pub id: CommandId,
    /// Canonical name, lowercase, without the `/`.
    pub name: &'static str,
    /// Other names for the same command, lowercase, without the `/`.
    pub aliases: &'static [&'static str],
    /// Argument hint shown in help and completion (`[N]`, `<id|title>`), empty when none.
    pub args_hint: &'static str,
    /// What the arguments must look like.
    pub args: ArgSpec,
    /// One-line help (no trailing period).
    pub help: &'static str,
    /// Surfaces serving the command.
    pub surfaces: &'static [Surface],
}

impl CommandSpec {
    /// Whether `surface` serves this command.
    pub fn on(&self, surface: Surface) -> bool {
        self.surfaces.contains(&surface)
    }

    /// Whether `name` (lowercase, no `/`) is this command's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// The registry, in `/help` order. Names and aliases are unique across the table (tested).
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        id: CommandId::New,
        name: "new",
        aliases: &["reset"],
        args_hint: "",
        args: ArgSpec::None,
        help: "start a new session",
        surfaces: BOTH,
    },
    CommandSpec {
        id: CommandId::Retry,
        name: "retry",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "run the last message again",
        surfaces: BOTH,
    },
    CommandSpec {
        id: CommandId::Undo,
        name: "undo",
        aliases: &[],
        args_hint: "[N]",
        args: ArgSpec::Count,
        help: "remove the last N turns (default 1)",
        surfaces: BOTH,
    },
    CommandSpec {
        id: CommandId::Sessions,
        name: "sessions",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "recent sessions",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Resume,
        name: "resume",
        aliases: &[],
        args_hint: "[id|title]",
        args: ArgSpec::OptionalText,
        help: "switch to a stored session (id, title or id prefix); alone: pick a recent one",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Title,
        name: "title",
        aliases: &[],
        args_hint: "[name]",
        args: ArgSpec::OptionalText,
        help: "show or set this session's title",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::History,
        name: "history",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "the conversation so far",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Clear,
        name: "clear",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "clear the screen and start a new session",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Status,
        name: "status",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "session, model, running and queued work",
        surfaces: BOTH,
    },
    CommandSpec {
        id: CommandId::Usage,
        name: "usage",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "tokens used in this session",
        surfaces: BOTH,
    },
    CommandSpec {
        id: CommandId::Model,
        name: "model",
        aliases: &[],
        args_hint: "[name]",
        args: ArgSpec::OptionalText,
        help: "the model in use",
        surfaces: BOTH,
    },
    CommandSpec {
        id: CommandId::Compress,
        name: "compress",
        aliases: &["compact"],
        args_hint: "[focus]",
        args: ArgSpec::OptionalText,
        help: "summarize older messages now (optionally what to keep in focus)",
        surfaces: BOTH,
    },
    CommandSpec {
        id: CommandId::Memory,
        name: "memory",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "memory entries and usage",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Skills,
        name: "skills",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "installed skills",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Cron,
        name: "cron",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "scheduled jobs (manage them with `hermes cron …`)",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Stop,
        name: "stop",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "interrupt the running turn, drop queued messages",
        surfaces: GATEWAY_ONLY,
    },
    CommandSpec {
        id: CommandId::Approve,
        name: "approve",
        aliases: &["yes"],
        args_hint: "[session]",
        args: ArgSpec::OptionalWord(&["session", "always"]),
        help: "allow the command waiting for approval (session: stop asking for this kind)",
        surfaces: GATEWAY_ONLY,
    },
    CommandSpec {
        id: CommandId::Deny,
        name: "deny",
        aliases: &["no"],
        args_hint: "",
        args: ArgSpec::None,
        help: "refuse the command waiting for approval",
        surfaces: GATEWAY_ONLY,
    },
    CommandSpec {
        id: CommandId::SetHome,
        name: "sethome",
        aliases: &["set-home"],
        args_hint: "",
        args: ArgSpec::None,
        help: "make this chat the home channel for deliveries",
        surfaces: GATEWAY_ONLY,
    },
    CommandSpec {
        id: CommandId::Skin,
        name: "skin",
        aliases: &[],
        args_hint: "[name]",
        args: ArgSpec::OptionalText,
        help: "list skins, or switch to one",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Statusbar,
        name: "statusbar",
        aliases: &["sb"],
        args_hint: "",
        args: ArgSpec::None,
        help: "show or hide the status line after answers",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Prompt,
        name: "prompt",
        aliases: &["compose"],
        args_hint: "[text]",
        args: ArgSpec::OptionalText,
        help: "write the message in $EDITOR, then send it",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Insights,
        name: "insights",
        aliases: &[],
        args_hint: "[days]",
        args: ArgSpec::OptionalText,
        help: "sessions, turns, tokens, cost and tools of the last days (default 30)",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Personality,
        name: "personality",
        aliases: &[],
        args_hint: "[name]",
        args: ArgSpec::OptionalText,
        help: "list the SOUL.md presets, or switch to one (from the next session)",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Toolsets,
        name: "toolsets",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "the enabled toolsets and their tools",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Platforms,
        name: "platforms",
        aliases: &["gateway"],
        args_hint: "",
        args: ArgSpec::None,
        help: "the gateway's platforms and whether each is set up",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Config,
        name: "config",
        aliases: &[],
        args_hint: "",
        args: ArgSpec::None,
        help: "where the settings are, and the model and toolsets in force",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Version,
        name: "version",
        aliases: &["v"],
        args_hint: "",
        args: ArgSpec::None,
        help: "the hermes version",
        surfaces: CLI_ONLY,
    },
    CommandSpec {
        id: CommandId::Help,
        name: "help",
        aliases: &["?", "start"],
        args_hint: "",
        args: ArgSpec::OptionalText,
        help: "this list",
        surfaces: BOTH,
    },
    CommandSpec {
        id: CommandId::Quit,
        name: "quit",
        aliases: &["exit", "q"],
        args_hint: "",
        args: ArgSpec::None,
        help: "leave (also Ctrl-D, or Ctrl-C twice)",
        surfaces: CLI_ONLY,
    },
];

/// The entry of `id`. Every [`CommandId`] has exactly one entry (tested), so this never
/// misses; `None` would mean a variant was added without its entry.
pub fn spec(id: CommandId) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|c| c.id == id)
}

/// The entry answering to `name` (lowercase, no `/`) on any surface.
pub fn lookup(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|c| c.answers_to(name))
}

/// The commands `surface` serves, in `/help` order.
pub fn commands(surface: Surface) -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS.iter().filter(move |c| c.on(surface))
}

/// A recognised command with its checked argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Which command.
    pub id: CommandId,
    /// The name as typed, lowercased and without a `@bot` suffix (`reset` for `/reset`); hooks
    /// report it as `command:<name>`.
    pub name: String,
    /// The text after the name, trimmed; `None` when there was none. Already checked against
    /// the command's [`ArgSpec`].
    pub arg: Option<String>,
}

impl Invocation {
    /// The count of an [`ArgSpec::Count`] command (`/undo 3` → 3, `/undo` → 1).
    pub fn count(&self) -> u32 {
        self.arg
            .as_deref()
            .and_then(|a| a.parse().ok())
            .unwrap_or(1)
    }

    /// The argument text, when there is one.
    pub fn text(&self) -> Option<&str> {
        self.arg.as_deref()
    }
}

/// A slash command line, classified for one surface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A command this surface serves, with a valid argument.
    Command(Invocation),
    /// A `/word` that is no command at all (a skill name, perhaps). `arg` is the trimmed
    /// text after the name, empty when none.
    Unknown {
        /// The name, lowercased, without `/` and `@bot` suffix.
        name: String,
        /// The text after the name.
        arg: String,
    },
    /// A known command used wrongly or on a surface that does not serve it.
    Invalid(CommandError),
}

/// Why a known command cannot run as typed. `Display` is the message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    /// The command exists, but not on this surface.
    WrongSurface {
        /// Canonical name.
        name: &'static str,
        /// Where it was typed.
        surface: Surface,
    },
    /// The argument does not fit the command's [`ArgSpec`].
    BadArgument {
        /// Canonical name.
        name: &'static str,
        /// The argument hint (`[N]`), empty when the command takes none.
        hint: &'static str,
        /// What is wrong.
        problem: String,
    },
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::WrongSurface { name, surface } => {
                let other = match surface {
                    Surface::Cli => Surface::Gateway,
                    Surface::Gateway => Surface::Cli,
                };
                write!(
                    f,
                    "/{name} is not available here; it works in {}. /help lists what works here.",
                    other.place()
                )
            }
            CommandError::BadArgument {
                name,
                hint,
                problem,
            } => {
                let usage = if hint.is_empty() {
                    format!("/{name}")
                } else {
                    format!("/{name} {hint}")
                };
                write!(f, "/{name}: {problem} (usage: {usage})")
            }
        }
    }
}

impl std::error::Error for CommandError {}

/// Splits a slash command line into its name (lowercase, `@bot` suffix dropped — Telegram adds
/// it in groups) and trimmed argument. `None` when `input` is not a command: it must be one
/// line starting with a single `/` followed by a name (`/etc/hosts is…` and `//x` are text).
pub fn split(input: &str) -> Option<(String, String)> {
    let trimmed = input.trim();
    let rest = trimmed.strip_prefix('/')?;
    if trimmed.contains('\n') || rest.is_empty() || rest.starts_with('/') {
        return None;
    }
    let (word, arg) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (rest, ""),
    };
    // A path such as `/etc/hosts` is text, not a command.
    if word.contains('/') {
        return None;
    }
    let name = word.split('@').next().unwrap_or(word).to_lowercase();
    if name.is_empty() {
        return None;
    }
    Some((name, arg.to_string()))
}

/// Parses `input` typed on `surface`. `None` when it is not a slash command (see [`split`]).
pub fn parse(input: &str, surface: Surface) -> Option<Parsed> {
    let (name, arg) = split(input)?;
    let Some(spec) = lookup(&name) else {
        return Some(Parsed::Unknown { name, arg });
    };
    if !spec.on(surface) {
        return Some(Parsed::Invalid(CommandError::WrongSurface {
            name: spec.name,
            surface,
        }));
    }
    Some(match check_arg(spec, &arg) {
        Ok(arg) => Parsed::Command(Invocation {
            id: spec.id,
            name,
            arg,
        }),
        Err(problem) => Parsed::Invalid(CommandError::BadArgument {
            name: spec.name,
            hint: spec.args_hint,
            problem,
        }),
    })
}

fn check_arg(spec: &CommandSpec, arg: &str) -> Result<Option<String>, String> {
    if arg.is_empty() {
        return match spec.args {
            ArgSpec::RequiredText => Err("an argument is required".to_string()),
            _ => Ok(None),
        };
    }
    match spec.args {
        ArgSpec::None => Err(format!("takes no argument, got \"{arg}\"")),
        ArgSpec::Count => match arg.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(Some(n.to_string())),
            _ => Err(format!(
                "expected a whole number of 1 or more, got \"{arg}\""
            )),
        },
        ArgSpec::OptionalText | ArgSpec::RequiredText => Ok(Some(arg.to_string())),
        ArgSpec::OptionalWord(words) => {
            let lower = arg.to_lowercase();
            if words.contains(&lower.as_str()) {
                Ok(Some(lower))
            } else {
                Err(format!(
                    "expected {} or nothing, got \"{arg}\"",
                    words.join(" or ")
                ))
            }
        }
    }
}

/// The `/help` text of `surface`: one line per command it serves (name, aliases, argument
/// hint, help), then what else the surface accepts.
pub fn help_text(surface: Surface) -> String {
    let mut rows: Vec<(String, &str)> = commands(surface)
        .map(|c| {
            let mut head = format!("/{}", c.name);
            for a in c.aliases.iter().filter(|a| shown_alias(a)) {
                head.push_str(&format!(", /{a}"));
            }
            if !c.args_hint.is_empty() {
                head.push(' ');
                head.push_str(c.args_hint);
            }
            (head, c.help)
        })
        .collect();
    rows.push((
        "/<skill> [text]".to_string(),
        "load a skill into this message",
    ));
    let width = rows
        .iter()
        .map(|(h, _)| h.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::from("Commands:\n");
    for (head, help) in &rows {
        let pad = width - head.chars().count();
        out.push_str(&format!("  {head}{}  {help}\n", " ".repeat(pad)));
    }
    out.push_str(match surface {
        Surface::Cli => {
            "Input: end a line with \\ to continue on the next line; Alt-Enter inserts a newline;\n\
             Tab completes commands, skills, /model names and file paths; Ctrl-R searches the history.\n\
             Ctrl-C while the agent works interrupts the turn."
        }
        Surface::Gateway => "Anything else goes to the agent.",
    });
    out
}

/// Aliases left out of help: `/start` is Telegram's greeting, `/yes`, `/no`, `/?` and `/q`
/// are shorthands for listed names.
const UNLISTED_ALIASES: &[&str] = &["start", "yes", "no", "?", "q"];

/// Whether `/help` lists `alias` (shorthands and Telegram's `/start` are left out).
pub fn shown_alias(alias: &str) -> bool {
    !UNLISTED_ALIASES.contains(&alias)
}

/// Completion candidates for a partial command name typed on `surface` (`prefix` without the
/// `/`, any case): `(name, spec)` for every name or alias starting with it, canonical names
/// first, each list in registry order. An empty prefix lists every canonical name.
pub fn complete(prefix: &str, surface: Surface) -> Vec<(&'static str, &'static CommandSpec)> {
    let prefix = prefix.trim_start_matches('/').to_lowercase();
    let mut out: Vec<(&'static str, &'static CommandSpec)> = commands(surface)
        .filter(|c| c.name.starts_with(&prefix))
        .map(|c| (c.name, c))
        .collect();
    if !prefix.is_empty() {
        for c in commands(surface) {
            for a in c.aliases.iter().filter(|a| a.starts_with(&prefix)) {
                out.push((a, c));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
