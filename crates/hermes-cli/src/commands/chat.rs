//! `hermes chat -q "…"` and `hermes` / `hermes chat` without `-q`. One-shot mode (FEATURES §1
//! CLI): the answer on stdout, progress on stderr, `--json` for JSONL events; exit 0 on
//! success, 1 on failure, 130 when interrupted. Without `-q`: the setup offer on a first run,
//! then the interactive REPL (`crate::repl`).

use std::sync::Arc;

use anyhow::Result;
use hermes_agent::AgentHandle;
use hermes_protocol::{AgentEvent, Op, TurnOutcome};

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::assembly::build_agent;
use crate::render::Renderer;

/// `hermes chat -q QUERY [--image PATH]`: loads the home and runs one turn; returns the exit
/// code.
pub async fn one_shot(
    profile: Option<&str>,
    args: &ChatArgs,
    query: &str,
    image: Option<&std::path::Path>,
) -> Result<i32> {
    let app = App::load(profile)?;
    app.warn_config();
    crate::repl::terminate::exit_cleanly_on_signals();
    run(&app, args, query, image)
        .await
        .map_err(crate::setup::with_setup_hint)
}

/// `hermes` (or `hermes chat` without `-q`): the interactive REPL on a terminal, after the
/// setup offer when nothing is configured; returns the exit code.
pub async fn interactive(profile: Option<&str>, args: &ChatArgs) -> Result<i32> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        let setup_first = if crate::setup::nothing_configured(profile, args) {
            "; nothing is configured yet either: `hermes setup --non-interactive \
             --provider …` configures hermes without questions"
        } else {
            ""
        };
        anyhow::bail!(
            "the interactive REPL needs a terminal on stdin; for scripts use \
             `hermes chat -q \"…\"` (add --json for machine-readable events){setup_first}"
        );
    }
    let app = App::load(profile)?;
    app.warn_config();
    let Some(app) = crate::setup::offer_if_unconfigured(app, profile, args).await? else {
        return Ok(1);
    };
    crate::repl::terminate::exit_cleanly_on_signals();
    crate::repl::start(&app, args).await
}

/// Runs one turn and returns the exit code.
async fn run(
    app: &App,
    args: &ChatArgs,
    query: &str,
    image: Option<&std::path::Path>,
) -> Result<i32> {
    if let Some(path) = image
        && !path.is_file()
    {
        anyhow::bail!("--image {}: no such file", path.display());
    }
    // Resolve `-s` first: a bad skill name must not leave an empty session behind.
    let text = crate::views::skills::preload_message(
        &app.home,
        args.skills.as_deref().unwrap_or_default(),
        query,
        &app.config
            .skills
            .disabled_for(Some(crate::assembly::runtime::SKILLS_PLATFORM)),
    )?;
    // MCP elicitation asks the user only when there is one at a terminal.
    let elicitor = std::io::IsTerminal::is_terminal(&std::io::stdin()).then(|| {
        Arc::new(crate::repl::mcp_elicit::TerminalElicitor::new())
            as Arc<dyn hermes_mcp::elicitation::Elicitor>
    });
    // `clarify` asks only when someone is at a terminal; otherwise it returns its notice.
    let clarifier = std::io::IsTerminal::is_terminal(&std::io::stdin()).then(|| {
        Arc::new(crate::repl::clarify_prompt::TerminalClarifier::new())
            as Arc<dyn hermes_tools::Clarifier>
    });
    let (agent, kit) = build_agent(
        app,
        args,
        Arc::new(hermes_tools::FixedApprover(hermes_tools::Approval::Deny)),
        elicitor,
        clarifier,
    )
    .await?;
    let mut handle = AgentHandle::spawn(agent);
    let (display, warnings) = crate::render::display::Display::load(
        &app.home,
        &app.config.display,
        args.quiet,
        args.verbose,
    );
    if !args.json {
        for w in warnings {
            errln!("warning: {w}");
        }
    }
    let mut renderer = display.renderer(Renderer::auto_mode(args.json));
    crate::repl::terminate::handling_ctrl_c();
    // The file is named in the text either way: a model that is not sent the image can
    // still read it with its tools.
    let (text, images) = match image {
        Some(path) => {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            let note = format!("[attached image: {}]", path.display());
            let text = if text.trim().is_empty() {
                note
            } else {
                format!("{text}\n{note}")
            };
            (text, vec![path])
        }
        None => (text, Vec::new()),
    };
    handle.submit(Op::UserInput { text, images });
    let mut code = 1;
    let mut ticker = tokio::time::interval(std::time::Duration::from_millis(100));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = ticker.tick() => renderer.tick(),
            event = handle.next_event() => match event {
                Some(ev) => {
                    renderer.handle(&ev);
                    if let AgentEvent::TurnFinished { outcome, .. } = &ev {
                        code = match outcome {
                            TurnOutcome::Completed | TurnOutcome::BudgetExhausted => 0,
                            TurnOutcome::Interrupted => 130,
                            TurnOutcome::Failed => 1,
                        };
                        break;
                    }
                }
                None => break,
            },
            _ = tokio::signal::ctrl_c() => handle.interrupt(),
        }
    }
    // A new session started with `-s` is titled with the user's words, not the skill
    // preface the message began with (issue 20 item 6).
    let preloaded = args.skills.as_ref().is_some_and(|s| !s.is_empty());
    if preloaded
        && args.resume.is_none()
        && !args.continue_last
        && let Some(title) = crate::views::sessions::title_from_text(query)
        && let Err(e) = kit.store.set_title_numbered(&handle.session_id(), &title)
    {
        tracing::warn!(error = %e, "could not title the session");
    }
    // The session summary (tokens and cost) goes to stderr with the other progress output.
    if !args.quiet {
        errln!(
            "{}",
            crate::views::sessions::usage_text(&kit.store, &handle.session_id())
        );
    }
    let _ = handle.shutdown().await;
    Ok(code)
}
