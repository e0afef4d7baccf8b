//! Python Hermes slash commands hermes does not serve, and the one line that says what to use
//! instead (issue 20).

/// Python Hermes slash commands hermes does not serve, with what to use instead (issue 20:
/// every Hermes command either works or says in one line what to use instead). Names as in
/// Python Hermes 0.19.0's `hermes_cli/commands.py`.
pub(super) const INSTEAD: &[(&[&str], &str)] = &[
    (&["redraw"], "the screen redraws itself; Ctrl-L clears it"),
    (
        &["save"],
        "every message is already saved in state.db; `hermes sessions export <id>` writes a transcript",
    ),
    (
        &["handoff"],
        "hand-off to a messaging platform is not supported; the gateway keeps its own session per chat",
    ),
    (
        &["branch", "fork"],
        "branching is not supported; /new starts a fresh session, /undo removes turns",
    ),
    (
        &["rollback", "snapshot", "snap"],
        "filesystem checkpoints are not supported; /undo removes turns from the conversation",
    ),
    (
        &["background", "bg", "btw"],
        "background prompts are not supported; `hermes chat -q \"…\" &` runs one in another shell",
    ),
    (
        &["agents", "tasks"],
        "delegate_task subagents report in the tool lines; /status shows the session",
    ),
    (
        &["queue"],
        "queueing is not supported in the REPL; send the message when the turn ends",
    ),
    (
        &["steer"],
        "steering is not supported in the REPL; Ctrl-C interrupts the turn, then send the correction",
    ),
    (
        &["goal", "subgoal"],
        "standing goals are not supported; say the goal in your message",
    ),
    (
        &["moa"],
        "Mixture of Agents is not supported; /model switches the model",
    ),
    (
        &["whoami"],
        "there are no access levels in the REPL; the gateway's allowlists are in `hermes gateway status`",
    ),
    (
        &["profile"],
        "profiles are chosen at start: `hermes -p NAME`",
    ),
    (
        &["codex-runtime", "codex_runtime"],
        "the Codex app-server runtime is not supported",
    ),
    (
        &["timestamps", "ts"],
        "timestamps are not shown; `hermes sessions show <id>` lists each message's time",
    ),
    (
        &["verbose"],
        "set `display.tool_progress` (off, new, all, verbose) with `hermes config set display.tool_progress verbose`",
    ),
    (
        &["footer"],
        "there is no gateway footer; /usage shows tokens and cost",
    ),
    (
        &["yolo"],
        "start with `hermes --yolo` to skip approvals (hard-line commands stay blocked)",
    ),
    (
        &["reasoning"],
        "show reasoning with `hermes config set display.show_reasoning true` or `hermes -v`",
    ),
    (
        &["fast"],
        "fast mode is not supported; /model switches the model",
    ),
    (
        &["indicator"],
        "the busy indicator comes with the skin (/skin)",
    ),
    (&["voice"], "voice mode is not supported"),
    (
        &["busy"],
        "Enter while a turn runs is not queued in the REPL; `display.busy_input_mode` applies to the gateway",
    ),
    (
        &["tools"],
        "`hermes tools list` shows the tools; `hermes tools enable|disable NAME` changes them (/toolsets lists them here)",
    ),
    (
        &["bundles"],
        "skill bundles are not supported; `-s a,b` loads several skills",
    ),
    (&["pet", "hatch", "generate-pet"], "pets are not supported"),
    (
        &["learn"],
        "ask in plain words (\"make a skill from …\"): the agent writes skills with skill_manage",
    ),
    (
        &["suggestions", "suggest", "blueprint", "bp"],
        "automation blueprints are not supported; `hermes cron create` schedules a job",
    ),
    (
        &["curator"],
        "there is no skill curator; `hermes skills list|show|remove` manage skills",
    ),
    (&["kanban"], "the kanban board is not supported"),
    (
        &["reload"],
        ".env is read at start; restart hermes after changing it",
    ),
    (
        &["reload-mcp", "reload_mcp"],
        "MCP servers reconnect by themselves; changes to mcp_servers apply at the next start",
    ),
    (
        &["reload-skills", "reload_skills"],
        "skills are re-read before every message: a new skill is there already",
    ),
    (
        &["browser"],
        "browser tools are not supported; web_extract reads pages",
    ),
    (
        &["plugins"],
        "plugins are not supported; MCP servers add tools (`hermes mcp add`)",
    ),
    (&["commands"], "/help lists every command"),
    (
        &["restart"],
        "restart the gateway with `hermes gateway restart`",
    ),
    (
        &["subscription", "upgrade", "topup"],
        "Nous billing is not shown in hermes; /usage shows tokens and cost",
    ),
    (
        &["platform"],
        "/platforms shows the platforms; pause one by removing its token from .env",
    ),
    (
        &["copy"],
        "copying to the clipboard is not supported; select the text in your terminal",
    ),
    (
        &["paste", "image"],
        "images are not supported yet; mention the file path and the agent can read it",
    ),
    (
        &["update"],
        "update by installing a newer build (`scripts/install.sh`)",
    ),
    (
        &["debug"],
        "`hermes logs` shows the logs; nothing is uploaded",
    ),
    (
        &["journey", "learning", "memory-graph"],
        "/memory and /skills show what was learned",
    ),
    (
        &["topic"],
        "Telegram DM topics are not supported; each chat has one session",
    ),
];

/// What to use instead of the Python Hermes command `/name`, when hermes does not serve it.
pub fn instead(name: &str) -> Option<&'static str> {
    INSTEAD
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, text)| *text)
}

/// The message for a `/word` that is no command here: for a Python Hermes command, what to
/// use instead; otherwise that it is unknown, pointing at `/help`.
pub fn unknown_message(name: &str) -> String {
    match instead(name) {
        Some(text) => format!("/{name} is not in hermes: {text}."),
        None => format!("Unknown command /{name}. /help lists the commands."),
    }
}
