//! Python Hermes flags hermes does not have (issue 20: "Every other Hermes command … either
//! works or answers, in one line, what to use instead"). A flag the parser does not know but
//! Python Hermes 0.19.0 has on the same command gets one line saying so (and what to use,
//! where there is something), exit code 2, instead of clap's generic error. The flag lists
//! are from Python Hermes' argparse tree (`hermes_cli/subcommands/*.py`), for the commands
//! both programs have; every other unknown flag keeps clap's own error.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// Python Hermes' flags per command path (`""` is `hermes` itself), the ones hermes lacks
/// included; a flag hermes has is simply parsed and never looked up here.
const PYTHON_FLAGS: &[(&str, &str)] = &[
    (
        "",
        "-z --oneshot --usage-file --no-restore-cwd -w --worktree --accept-hooks \
         --pass-session-id --ignore-user-config --ignore-rules --safe-mode --tui --cli --dev",
    ),
    (
        "chat",
        "--no-restore-cwd -w --worktree --accept-hooks --checkpoints --pass-session-id \
         --ignore-user-config --ignore-rules --safe-mode --source --tui --cli --dev",
    ),
    (
        "auth add",
        "--type --api-key --portal-url --inference-url --client-id --scope --no-browser \
         --timeout --insecure --ca-bundle",
    ),
    ("backup", "-q --quick"),
    ("config get", "--json"),
    ("cron", "--accept-hooks"),
    ("cron list", "--all"),
    ("cron run", "--accept-hooks"),
    ("cron tick", "--accept-hooks"),
    ("doctor", "--ack"),
    ("gateway", "--accept-hooks"),
    (
        "gateway install",
        "--force --system --run-as-user --start-now --no-start-now --start-on-login \
         --no-start-on-login --elevated-handoff",
    ),
    ("gateway restart", "--system --all --platform"),
    (
        "gateway run",
        "-v --verbose -q --quiet --replace --force --no-supervise --external-supervisor \
         --accept-hooks",
    ),
    ("gateway start", "--system --all --platform"),
    ("gateway status", "--deep -l --full --system --platform"),
    ("gateway stop", "--system --all"),
    ("gateway uninstall", "--system"),
    ("mcp", "--accept-hooks"),
    (
        "mcp add",
        "--command --args --auth --preset --connect-timeout",
    ),
    (
        "model",
        "--refresh --portal-url --inference-url --client-id --scope --no-browser --timeout \
         --ca-bundle --insecure",
    ),
    ("prompt-size", "--platform"),
    (
        "sessions export",
        "--upload --public --no-redact --only --session-id --older-than --newer-than --before \
         --after --source --title --end-reason --cwd --min-messages --max-messages --model \
         --provider --user --chat-id --chat-type --branch --min-tokens --max-tokens --min-cost \
         --max-cost --min-tool-calls --max-tool-calls --dry-run -y --yes --redact --lineage \
         --delete-after-verified --force",
    ),
    ("sessions list", "--workspace"),
    (
        "sessions prune",
        "--newer-than --before --after --title --end-reason --cwd --min-messages \
         --max-messages --model --provider --user --chat-id --chat-type --branch --min-tokens \
         --max-tokens --min-cost --max-cost --min-tool-calls --max-tool-calls \
         --include-archived",
    ),
    ("setup", "--reset --reconfigure --quick --portal"),
    ("skills install", "--name -y --yes"),
    ("skills list", "--source --enabled-only"),
    ("tools", "--summary"),
];

/// What to use instead, for the flags where hermes has something: `(path, flag, answer)`.
const ANSWERS: &[(&str, &str, &str)] = &[
    (
        "",
        "-z",
        "use `hermes chat -q \"…\"` for one prompt and its answer",
    ),
    (
        "",
        "--oneshot",
        "use `hermes chat -q \"…\"` for one prompt and its answer",
    ),
    (
        "setup",
        "--reset",
        "to start over, move config.yaml aside (`hermes config path` shows where it is) and run `hermes setup`",
    ),
    (
        "setup",
        "--reconfigure",
        "`hermes setup` asks every question again, offering the current settings first",
    ),
    (
        "mcp add",
        "--command",
        "a stdio server's command and arguments go after `--`: `hermes mcp add NAME -- CMD ARG…`",
    ),
    (
        "mcp add",
        "--args",
        "a stdio server's command and arguments go after `--`: `hermes mcp add NAME -- CMD ARG…`",
    ),
    (
        "gateway install",
        "--system",
        "hermes installs a systemd user unit only (`systemctl --user`); a system unit can run `hermes gateway run`",
    ),
    (
        "gateway run",
        "--replace",
        "stop the running gateway first (`hermes gateway stop`, or `hermes gateway restart` for the service)",
    ),
    (
        "cron list",
        "--all",
        "`hermes cron list` already lists every job, paused ones included",
    ),
    (
        "skills install",
        "--name",
        "the skill's name comes from its SKILL.md; `--category` picks the folder",
    ),
];

/// The one line for a parse error that is a Python Hermes flag hermes lacks on the command
/// `argv` (the process arguments, program name first) names; `None` for any other error.
pub fn answer(err: &clap::Error, argv: &[String], root: &clap::Command) -> Option<String> {
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(raw)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = raw.split('=').next().unwrap_or(raw);
    let path = command_path(argv.get(1..).unwrap_or_default(), root);
    let known = PYTHON_FLAGS
        .iter()
        .any(|(p, flags)| *p == path && flags.split_whitespace().any(|f| f == flag));
    if !known {
        return None;
    }
    let shown = if path.is_empty() {
        format!("hermes {flag}")
    } else {
        format!("hermes {path} {flag}")
    };
    let help = if path.is_empty() {
        "hermes --help".to_string()
    } else {
        format!("hermes {path} --help")
    };
    Some(
        match ANSWERS.iter().find(|(p, f, _)| *p == path && *f == flag) {
            Some((_, _, text)) => format!("`{shown}` is a Python Hermes flag: {text}"),
            None => format!(
                "`{shown}` is a Python Hermes flag hermes does not have; `{help}` lists what it has"
            ),
        },
    )
}

/// The sub-command words of `args` (without the program name), as far as they name
/// sub-commands of `root`, joined by spaces; the values of flags are skipped.
fn command_path(args: &[String], root: &clap::Command) -> String {
    let mut cmd = root;
    let mut path: Vec<&str> = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        if let Some(name) = word.strip_prefix('-') {
            let takes_value = !word.contains('=')
                && cmd.get_arguments().any(|a| {
                    let hit = match name.strip_prefix('-') {
                        Some(long) => a.get_long() == Some(long),
                        None => name.chars().count() == 1 && a.get_short() == name.chars().next(),
                    };
                    hit && a.get_action().takes_values()
                });
            if takes_value {
                words.next();
            }
            continue;
        }
        match cmd.find_subcommand(word) {
            Some(sub) => {
                path.push(sub.get_name());
                cmd = sub;
            }
            None => break,
        }
    }
    path.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn argv(words: &str) -> Vec<String> {
        std::iter::once("hermes")
            .chain(words.split_whitespace())
            .map(str::to_string)
            .collect()
    }

    fn line_for(words: &str) -> Option<String> {
        let root = crate::commands::args::Cli::command();
        let err = root.clone().try_get_matches_from(argv(words)).unwrap_err();
        answer(&err, &argv(words), &root)
    }

    #[test]
    fn python_flags_get_one_line_and_others_keep_claps_error() {
        let line = line_for("--oneshot hi").unwrap();
        assert!(
            line.contains("is a Python Hermes flag: use `hermes chat -q"),
            "{line}"
        );
        let line = line_for("-p work setup --reset").unwrap();
        assert!(line.contains("`hermes setup --reset`"), "{line}");
        let line = line_for("gateway run --no-supervise").unwrap();
        assert!(line.contains("`hermes gateway run --help` lists"), "{line}");
        let line = line_for("gateway run --replace").unwrap();
        assert!(line.contains("hermes gateway stop"), "{line}");
        let line = line_for("mcp add files --command=npx").unwrap();
        assert!(line.contains("after `--`"), "{line}");
        assert_eq!(line_for("chat --bogus"), None);
        assert_eq!(line_for("setup --image"), None, "a flag of another command");
    }

    #[test]
    fn every_listed_path_is_a_command_and_no_listed_flag_is_one_of_hermes() {
        // A flag hermes gains must leave the list (it would never be looked up), and a
        // path that stops being a command would be dead.
        let root = crate::commands::args::Cli::command();
        for (path, flags) in PYTHON_FLAGS {
            let mut cmd = root.clone();
            for word in path.split_whitespace() {
                cmd = cmd
                    .find_subcommand(word)
                    .unwrap_or_else(|| panic!("`{path}` is not a command"))
                    .clone();
            }
            for flag in flags.split_whitespace() {
                let ours = cmd.get_arguments().any(|a| match flag.strip_prefix("--") {
                    Some(long) => a.get_long() == Some(long),
                    None => a.get_short() == flag.chars().nth(1),
                });
                assert!(!ours, "`{path} {flag}` is a hermes flag now");
            }
        }
        for (path, flag, _) in ANSWERS {
            assert!(
                PYTHON_FLAGS
                    .iter()
                    .any(|(p, f)| p == path && f.split_whitespace().any(|x| x == *flag)),
                "{path} {flag}"
            );
        }
    }
}
