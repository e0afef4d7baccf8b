//! `hermes send`: a message from a script, cron job or CI step to a configured messaging
//! platform, through the same send-only adapters as `hermes mcp serve` (no model, no agent,
//! no running gateway). Flags and exit codes as Python Hermes 0.19.0's `hermes_cli/send_cmd.py`:
//! `-t/--to`, the message (or `-f/--file PATH`, `-f -` or piped stdin), `-s/--subject`,
//! `-l/--list [PLATFORM]`, `-q/--quiet`, `--json`; exit 0 sent (or listed), 1 the platform
//! refused or failed, 2 a usage or configuration error. `MEDIA:<path>` in the text sends that
//! file as a native attachment.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use hermes_gateway::{ChatTarget, Outbox, OutboxError};
use hermes_protocol::ChatAddress;
use serde_json::{Value, json};

use crate::assembly::app::App;

/// Exit code: sent, or listed.
const OK: i32 = 0;
/// Exit code: the platform refused or the send failed.
const FAILED: i32 = 1;
/// Exit code: bad arguments or configuration.
const USAGE: i32 = 2;

/// `hermes send`'s flags.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  hermes send --to telegram \"deploy finished\"          (the platform's home channel)
  echo \"RAM 92%\" | hermes send --to telegram:-1001234567890
  hermes send --to discord:#ops --file report.md
  hermes send --to slack:C0123ABCD --subject \"[CI]\" --file build.log
  hermes send --to telegram \"chart MEDIA:/tmp/chart.png\"  (a file as an attachment)
  hermes send --list telegram

Exit codes: 0 sent, 1 the platform refused or failed, 2 usage or configuration error.")]
pub struct SendArgs {
    /// Where to: `platform` (its home channel), `platform:chat_id`,
    /// `platform:chat_id:thread_id` or `platform:#channel-name` (looked up in the known
    /// channels). Matrix ids and email addresses are written whole (`matrix:!room:server`).
    #[arg(short = 't', long = "to", value_name = "TARGET")]
    pub to: Option<String>,
    /// The message (Markdown); without it, read from --file or piped stdin. With --list: the
    /// platform to list.
    pub message: Option<String>,
    /// Read the message from PATH (UTF-8 text; `-` for stdin).
    #[arg(short = 'f', long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// A first line put above the message, followed by a blank line.
    #[arg(short = 's', long, value_name = "LINE")]
    pub subject: Option<String>,
    /// List the known targets (the channel directory and the gateway's chats), optionally of
    /// one platform.
    #[arg(short = 'l', long = "list")]
    pub list: bool,
    /// Print nothing on success (the exit code tells).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `hermes send`; returns the exit code.
pub async fn run(profile: Option<&str>, args: &SendArgs) -> Result<i32> {
    let app = match App::load(profile) {
        Ok(app) => app,
        Err(e) => return Ok(usage(&format!("{e:#}"))),
    };
    if args.list {
        return list(&app, args);
    }
    let Some(to) = args.to.as_deref().map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(usage(
            "--to PLATFORM[:chat[:thread]] is required (`hermes send --list` shows the known targets)",
        ));
    };
    let (platform, chat) = match parse_to(to) {
        Ok(parts) => parts,
        Err(e) => return Ok(usage(&e)),
    };
    let body = match body(args) {
        Ok(Some(b)) if !b.trim().is_empty() => b,
        Ok(_) => {
            return Ok(usage(
                "no message: give it as an argument, with --file PATH, or on stdin",
            ));
        }
        Err(e) => return Ok(usage(&e)),
    };
    let text = match &args.subject {
        Some(subject) => format!("{subject}\n\n{}", body.trim_start()),
        None => body,
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let policy = hermes_gateway::MediaPolicy::dirs(vec![cwd, PathBuf::from("/")]);
    let tags = hermes_gateway::delivery::media_tags(&text, &policy);
    if let Some((path, why)) = tags.refused.first() {
        return Ok(usage(&format!("cannot send MEDIA:{path}: {why}")));
    }
    let adapters = match crate::commands::gateway::send_adapters(&app).await {
        Ok(a) => a,
        Err(e) => return Ok(usage(&format!("{e:#}"))),
    };
    let store = app.open_store()?;
    let outbox = Outbox::new(
        &adapters,
        hermes_gateway::outbox::home_channels_from_env(&app.env),
    )
    .with_sethome(hermes_gateway::status::HomeChannels::for_store(
        &app.home, &store,
    ));
    let chat = match chat {
        Some(c) => Some(resolve_name(&app, &store, &platform, c)?),
        None => None,
    };
    let outcome = deliver(&outbox, &platform, chat, &tags).await;
    Ok(report(args, to, outcome))
}

/// The parts and files sent, or why not.
type Outcome = Result<(usize, usize), OutboxError>;

/// Sends the text (when any is left besides the tags), then each file.
async fn deliver(
    outbox: &Outbox,
    platform: &str,
    chat: Option<ChatTarget>,
    tags: &hermes_gateway::delivery::MediaTags,
) -> Outcome {
    let parts = if tags.text.trim().is_empty() {
        0
    } else {
        outbox.send(platform, chat.clone(), &tags.text).await?
    };
    for path in &tags.files {
        outbox.send_file(platform, chat.clone(), path).await?;
    }
    Ok((parts, tags.files.len()))
}

/// Prints the outcome as asked and gives the exit code.
fn report(args: &SendArgs, to: &str, outcome: Outcome) -> i32 {
    match outcome {
        Ok((parts, files)) => {
            if args.json {
                let v = json!({"success": true, "target": to, "parts": parts, "files": files});
                outln!("{}", pretty(&v));
            } else if !args.quiet {
                outln!("sent to {to}{}", counts(parts, files));
            }
            OK
        }
        Err(e) => {
            let message = match &e {
                OutboxError::NotRunning { platform, running } => format!(
                    "platform `{platform}` is not configured in HERMES_HOME/.env (configured: {running})"
                ),
                other => other.to_string(),
            };
            if args.json {
                outln!("{}", pretty(&json!({"error": message, "target": to})));
            } else {
                errln!("hermes send: {message}");
            }
            match e {
                OutboxError::NotRunning { .. }
                | OutboxError::NoHomeChannel { .. }
                | OutboxError::Empty => USAGE,
                OutboxError::Send { .. } => FAILED,
            }
        }
    }
}

/// ` (3 parts, 1 file)`, or nothing for one part and no file.
fn counts(parts: usize, files: usize) -> String {
    let mut bits = Vec::new();
    if parts > 1 {
        bits.push(format!("{parts} parts"));
    }
    match files {
        0 => {}
        1 => bits.push("1 file".into()),
        n => bits.push(format!("{n} files")),
    }
    if bits.is_empty() {
        String::new()
    } else {
        format!(" ({})", bits.join(", "))
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Prints one usage line and gives the usage exit code.
fn usage(message: &str) -> i32 {
    errln!("hermes send: {}", hermes_llm::redact_secrets(message));
    USAGE
}

/// `platform` alone (its home channel) or a [`ChatAddress`].
fn parse_to(to: &str) -> Result<(String, Option<ChatTarget>), String> {
    if !to.contains(':') {
        if !hermes_protocol::target::is_platform_name(to) {
            return Err(format!(
                "`{to}` is not a platform name (telegram, discord, slack, …)"
            ));
        }
        return Ok((to.to_ascii_lowercase(), None));
    }
    let address = ChatAddress::parse(to).map_err(|e| format!("cannot read --to: {e}"))?;
    let chat = ChatTarget {
        chat_id: address.chat_id,
        thread_id: address.thread_id,
        reply_to: None,
    };
    Ok((address.platform, Some(chat)))
}

/// A `#name` chat of a platform whose ids are not names is looked up among the known
/// channels (case-insensitively, with or without `#`); anything else, or a name not found,
/// is sent as written (IRC channels and Slack accept names).
fn resolve_name(
    app: &App,
    store: &Arc<hermes_store::SessionStore>,
    platform: &str,
    mut chat: ChatTarget,
) -> Result<ChatTarget> {
    let Some(name) = chat.chat_id.strip_prefix('#') else {
        return Ok(chat);
    };
    if platform == "irc" {
        return Ok(chat);
    }
    let known =
        crate::commands::mcp::serve::conversations::channel_list(&app.home, store, Some(platform))?;
    let found = known["channels"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| {
            let n = c["name"].as_str().unwrap_or_default();
            n.trim_start_matches('#').eq_ignore_ascii_case(name)
        })
        .and_then(|c| c["target"].as_str())
        .and_then(|t| ChatAddress::parse(t).ok());
    if let Some(found) = found {
        chat.chat_id = found.chat_id;
        if chat.thread_id.is_none() {
            chat.thread_id = found.thread_id;
        }
    }
    Ok(chat)
}

/// The message: the argument, else `--file` (`-`: stdin), else stdin when it is not a
/// terminal. `Ok(None)`: none given.
fn body(args: &SendArgs) -> Result<Option<String>, String> {
    if let Some(text) = &args.message {
        return Ok(Some(text.clone()));
    }
    if let Some(path) = &args.file {
        if path.as_os_str() == "-" {
            return read_stdin().map(Some);
        }
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        return String::from_utf8(bytes).map(Some).map_err(|_| {
            format!(
                "{} is not UTF-8 text: --file reads the message; to attach a file write `MEDIA:{}` in the message",
                path.display(),
                path.display()
            )
        });
    }
    if std::io::stdin().is_terminal() {
        return Ok(None);
    }
    read_stdin().map(Some)
}

fn read_stdin() -> Result<String, String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    Ok(text)
}

/// `--list [PLATFORM]`: the known targets, then each platform's home channel.
fn list(app: &App, args: &SendArgs) -> Result<i32> {
    let platform = args.message.as_deref();
    let store = app.open_store()?;
    let known =
        crate::commands::mcp::serve::conversations::channel_list(&app.home, &store, platform)?;
    let homes = hermes_gateway::outbox::home_channels_from_env(&app.env);
    let sethome = hermes_gateway::status::HomeChannels::for_store(&app.home, &store).all();
    let mut home_rows = serde_json::Map::new();
    for (p, t) in &homes {
        home_rows.insert(p.clone(), json!(t.chat_id));
    }
    for (p, h) in sethome {
        home_rows.insert(p, json!(h.chat_id));
    }
    if let Some(p) = platform {
        home_rows.retain(|k, _| k.eq_ignore_ascii_case(p));
    }
    if args.json {
        let mut v = known.clone();
        v["home_channels"] = Value::Object(home_rows);
        outln!("{}", pretty(&v));
        return Ok(OK);
    }
    let channels = known["channels"].as_array().cloned().unwrap_or_default();
    if channels.is_empty() && home_rows.is_empty() {
        outln!(
            "no targets known yet: set a <PLATFORM>_HOME_CHANNEL, run the gateway once, or give a chat id (`hermes send --to telegram:<chat_id> …`)"
        );
        return Ok(OK);
    }
    for (p, chat) in &home_rows {
        outln!(
            "{p:<28} home channel ({})",
            chat.as_str().unwrap_or_default()
        );
    }
    for c in &channels {
        let target = c["target"].as_str().unwrap_or_default();
        let name = c["name"].as_str().unwrap_or_default();
        outln!("{target:<28} {name}");
    }
    Ok(OK)
}
