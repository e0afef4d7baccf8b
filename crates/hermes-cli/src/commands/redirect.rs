//! Python Hermes commands hermes does not have (issue 20 "Every other Hermes command …
//! answers, in one line, what to use instead — never `unknown command`"). Names are Python
//! Hermes 0.19.0's (`hermes_cli/main.py`'s argparse tree); each gets one line saying what to
//! use instead, and exit code 2. A word that is no Hermes command at all gets the nearest
//! command name, if one is close.

/// What to use instead of a Python Hermes subcommand: `(path, answer)`, the path being the
/// words of the command (`["sessions", "archive"]`).
const REDIRECTS: &[(&[&str], &str)] = &[
    (
        &["moa"],
        "Mixture of Agents is not in hermes; `fallback_providers:` in config.yaml adds models tried when the primary fails",
    ),
    (
        &["fallback"],
        "hermes reads fallback providers from `fallback_providers:` in config.yaml (`hermes config edit`)",
    ),
    (
        &["secrets"],
        "external secret sources are not supported; keys go in HERMES_HOME/.env (`hermes config set OPENROUTER_API_KEY …`) or `hermes auth add`",
    ),
    (
        &["migrate"],
        "nothing to migrate: hermes reads Python Hermes' config.yaml as it is (`hermes config check` lists what it does not use)",
    ),
    (
        &["proxy"],
        "no OAuth proxy in hermes; `hermes gateway run` serves an OpenAI-compatible API server (API_SERVER_KEY)",
    ),
    (
        &["lsp"],
        "Language Server Protocol support is not in hermes",
    ),
    (
        &["postinstall"],
        "nothing to install: hermes is one binary (`hermes model pull` downloads the local model)",
    ),
    (
        &["whatsapp"],
        "the WhatsApp Web bridge (Baileys) is not supported; WhatsApp through Meta's Business Cloud API is: set WHATSAPP_CLOUD_PHONE_NUMBER_ID, WHATSAPP_CLOUD_ACCESS_TOKEN, WHATSAPP_CLOUD_APP_SECRET and WHATSAPP_CLOUD_VERIFY_TOKEN in .env (README \"WhatsApp\")",
    ),
    (
        &["whatsapp-cloud"],
        "no setup wizard; set WHATSAPP_CLOUD_PHONE_NUMBER_ID, WHATSAPP_CLOUD_ACCESS_TOKEN, WHATSAPP_CLOUD_APP_SECRET and WHATSAPP_CLOUD_VERIFY_TOKEN in .env (README \"WhatsApp\"); `hermes gateway status` shows what is set",
    ),
    (
        &["slack"],
        "no Slack manifest generator; the README's Slack section lists the scopes and Socket Mode events, `hermes gateway status` shows what is set",
    ),
    (
        &["login"],
        "OAuth logins are not supported; `hermes setup` or `hermes auth add <provider>` stores an API key",
    ),
    (
        &["logout"],
        "`hermes auth remove <provider> <n>` removes a pooled key; provider keys in .env: `hermes config unset <NAME>`",
    ),
    (
        &["webhook"],
        "dynamic webhook subscriptions are not supported; the webhook adapter is set up with WEBHOOK_* in .env (README \"Webhook\")",
    ),
    (
        &["portal"],
        "Nous Portal: `hermes setup` with provider `nous` and an API key; the Tool Gateway is not supported",
    ),
    (&["kanban"], "the kanban board is not in hermes"),
    (
        &["project"],
        "projects are not in hermes; run hermes in the folder to work in",
    ),
    (
        &["hooks"],
        "no `hooks` command; hooks are read from HERMES_HOME/hooks/<name>/HOOK.yaml",
    ),
    (
        &["security"],
        "no supply-chain audit in hermes; `hermes doctor` checks the setup",
    ),
    (
        &["dump"],
        "use `hermes status` (a summary of every component) or `hermes doctor`",
    ),
    (
        &["debug", "share"],
        "nothing is uploaded; `hermes debug session ID` and `hermes debug prompt` show what a session sent, `hermes logs` the logs",
    ),
    (&["checkpoints"], "filesystem checkpoints are not in hermes"),
    (
        &["console"],
        "use `hermes` (the REPL) or `hermes chat -q \"…\"`",
    ),
    (
        &["bundles"],
        "skill bundles are not in hermes; `-s a,b` loads several skills (`hermes skills list`)",
    ),
    (
        &["plugins"],
        "plugins are not in hermes; MCP servers add tools (`hermes mcp add NAME -- CMD …`)",
    ),
    (
        &["curator"],
        "no background skill curator; `hermes skills list|show|remove` manage skills",
    ),
    (&["pets"], "pets are not in hermes"),
    (
        &["journey"],
        "no learning timeline; `hermes memory show` and `hermes skills list` show what was learned",
    ),
    (&["computer-use"], "computer use is not in hermes"),
    (&["claw"], "OpenClaw migration is not in hermes"),
    (
        &["update"],
        "update by installing a newer build (`scripts/install.sh` or `cargo install --locked --path crates/hermes-cli`)",
    ),
    (
        &["uninstall"],
        "remove the binary (`cargo uninstall hermes-cli`); HERMES_HOME stays until you delete it",
    ),
    (
        &["profile"],
        "`-p NAME` runs hermes on ~/.hermes/profiles/NAME (`hermes -p NAME setup` makes one)",
    ),
    (
        &["dashboard"],
        "no web dashboard; `hermes status` and `hermes insights` show the same facts",
    ),
    (
        &["serve"],
        "no backend server for the desktop app; `hermes gateway run` serves the API server",
    ),
    (&["desktop"], "no desktop app; use `hermes` in a terminal"),
    (&["gui"], "no desktop app; use `hermes` in a terminal"),
    (
        &["learning"],
        "no learning timeline; `hermes memory show` and `hermes skills list` show what was learned",
    ),
    (
        &["memory-graph"],
        "no learning timeline; `hermes memory show` and `hermes skills list` show what was learned",
    ),
    (
        &["sessions", "archive"],
        "sessions are not archived; `hermes sessions prune --older-than 30d` deletes old ones",
    ),
    (
        &["sessions", "optimize"],
        "`hermes doctor --fix` rebuilds the search index; SQLite needs nothing else",
    ),
    (
        &["sessions", "repair"],
        "`hermes doctor` checks state.db and `hermes doctor --fix` rebuilds its search index",
    ),
    (
        &["sessions", "browse"],
        "use `hermes sessions list`, then `hermes sessions show <id>` or `/resume` in the REPL",
    ),
    (
        &["config", "migrate"],
        "nothing to migrate: hermes reads Python Hermes' config.yaml as it is (`hermes config check`)",
    ),
    (
        &["gateway", "list"],
        "one gateway per home; `hermes gateway status` shows it",
    ),
    (
        &["gateway", "setup"],
        "platforms are set up in HERMES_HOME/.env (README \"The messaging gateway\"); `hermes gateway status` shows what is set",
    ),
    (
        &["gateway", "migrate-legacy"],
        "nothing to migrate: `hermes gateway install` writes the systemd user unit",
    ),
    (&["gateway", "enroll"], "the Nous relay is not supported"),
    (
        &["tools", "post-setup"],
        "nothing to set up after enabling a toolset; `hermes tools list` shows what is available",
    ),
    (
        &["mcp", "configure"],
        "edit a server with `hermes mcp remove NAME` then `hermes mcp add NAME …`, or `hermes config edit`",
    ),
    (
        &["mcp", "config"],
        "edit a server with `hermes mcp remove NAME` then `hermes mcp add NAME …`, or `hermes config edit`",
    ),
    (
        &["mcp", "reauth"],
        "use `hermes mcp logout NAME` then `hermes mcp login NAME`",
    ),
    (
        &["mcp", "picker"],
        "no MCP catalog; add a server with `hermes mcp add NAME -- CMD …` or `--url URL`",
    ),
    (
        &["mcp", "catalog"],
        "no MCP catalog; add a server with `hermes mcp add NAME -- CMD …` or `--url URL`",
    ),
    (
        &["mcp", "install"],
        "no MCP catalog; add a server with `hermes mcp add NAME -- CMD …` or `--url URL`",
    ),
    (
        &["skills", "browse"],
        "no skills hub; `hermes skills install <dir|git URL>` installs one",
    ),
    (
        &["skills", "search"],
        "no skills hub; `hermes skills list` shows the installed ones",
    ),
    (&["skills", "uninstall"], "use `hermes skills remove NAME`"),
    (
        &["skills", "check"],
        "no skills hub to check for updates; reinstall a newer copy with `hermes skills install <dir|git URL> --force`",
    ),
    (
        &["skills", "update"],
        "no skills hub to update from; reinstall a newer copy with `hermes skills install <dir|git URL> --force`",
    ),
    (
        &["skills", "audit"],
        "`hermes skills install` scans a skill before copying it; reinstall with `--force` to scan an installed one again",
    ),
    (
        &["skills", "reset"],
        "hermes ships no bundled skills to reset; `hermes skills remove NAME` deletes an installed one",
    ),
    (
        &["skills", "list-modified"],
        "hermes ships no bundled skills, so none is modified; `hermes skills list` shows the installed ones",
    ),
    (
        &["skills", "diff"],
        "hermes ships no bundled skills to compare with; `hermes skills show NAME` prints one",
    ),
    (
        &["skills", "opt-out"],
        "hermes ships no bundled skills to sync; `skills.disabled` in config.yaml hides a skill",
    ),
    (
        &["skills", "opt-in"],
        "hermes ships no bundled skills to sync; `hermes skills install <dir|git URL>` adds one",
    ),
    (
        &["skills", "repair-official"],
        "hermes ships no bundled skills to repair; `hermes skills install <dir|git URL> --force` replaces one",
    ),
    (
        &["skills", "publish"],
        "no skills hub to publish to; share the skill's folder or a git repository (`hermes skills install <git URL>`)",
    ),
    (
        &["skills", "snapshot"],
        "`hermes backup` saves HERMES_HOME, skills included, and `hermes import` restores it",
    ),
    (
        &["skills", "tap"],
        "no skill sources to tap; `hermes skills install <git URL>#<folder>` installs from any repository",
    ),
    (
        &["skills", "config"],
        "`skills.disabled` in config.yaml lists the skills left out (`hermes config edit`)",
    ),
    (&["skills", "inspect"], "use `hermes skills show NAME`"),
    (
        &["memory", "setup"],
        "external memory providers are not supported; memory lives in MEMORY.md and USER.md (`hermes memory show`)",
    ),
    (
        &["memory", "status"],
        "use `hermes memory show` (entries and usage of the char limits)",
    ),
    (
        &["memory", "off"],
        "set `memory.memory_enabled: false` with `hermes config set memory.memory_enabled false`",
    ),
    (
        &["memory", "reset"],
        "memory is in HERMES_HOME/memories/; `hermes memory edit` changes it",
    ),
    (
        &["auth", "reset"],
        "use `hermes auth remove <provider> <n>`",
    ),
    (&["auth", "status"], "use `hermes auth list`"),
    (
        &["auth", "logout"],
        "use `hermes auth remove <provider> <n>`; a key in .env goes with `hermes config unset <NAME>`",
    ),
    (&["auth", "spotify"], "Spotify is not supported"),
];

/// Answers `words` typed after the subcommands `parents` (`[]` for `hermes WORD …`,
/// `["sessions"]` for `hermes sessions WORD …`) with one line on stderr; returns the exit
/// code (2, as for any command-line mistake). `S` is the caller's own subcommand type at that
/// level (its names are the near misses offered), so this module needs no parser of its own
/// and the parser, which names every subcommand, is not imported back (no module ring).
pub fn answer<S: clap::Subcommand>(parents: &[&str], words: &[String]) -> i32 {
    let Some(word) = words.first() else {
        return 2;
    };
    let mut path: Vec<&str> = parents.to_vec();
    path.push(word.as_str());
    let shown = format!("hermes {}", path.join(" "));
    match REDIRECTS.iter().find(|(p, _)| *p == path.as_slice()) {
        Some((_, text)) => errln!("`{shown}`: {text}"),
        None => errln!("{}", unknown_line(parents, word, &command_names::<S>())),
    }
    2
}

/// The visible subcommand names of subcommand type `S`.
pub fn command_names<S: clap::Subcommand>() -> Vec<String> {
    S::augment_subcommands(clap::Command::new("hermes"))
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

/// The line for a word that is no command here: the nearest of `names` (the commands at
/// that level) when one is close.
fn unknown_line(parents: &[&str], word: &str, names: &[String]) -> String {
    let prefix = if parents.is_empty() {
        "hermes".to_string()
    } else {
        format!("hermes {}", parents.join(" "))
    };
    let best = names
        .iter()
        .map(|n| (strsim::jaro_winkler(word, n), n))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((_, name)) => format!(
            "`{prefix} {word}` is not a command; did you mean `{prefix} {name}`? (`{prefix} --help` lists them)"
        ),
        None => format!("`{prefix} {word}` is not a command; `{prefix} --help` lists them"),
    }
}

/// Every Python Hermes command path answered here (for tests).
#[cfg(test)]
pub fn redirected_paths() -> Vec<Vec<&'static str>> {
    REDIRECTS.iter().map(|(p, _)| p.to_vec()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_gets_the_nearest_command() {
        let names = ["sessions".to_string(), "setup".to_string()];
        let line = unknown_line(&[], "sesions", &names);
        assert!(line.contains("did you mean `hermes sessions`"), "{line}");
        let line = unknown_line(&[], "zzzz", &names);
        assert!(!line.contains("did you mean"), "{line}");
        let line = unknown_line(&["cron"], "lst", &["list".to_string()]);
        assert!(line.contains("did you mean `hermes cron list`"), "{line}");
    }
}
