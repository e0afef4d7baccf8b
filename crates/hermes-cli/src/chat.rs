//! One-shot mode: `hermes chat -q "…"` (FEATURES §1 CLI) — the answer on stdout, progress on
//! stderr, `--json` for JSONL events; exit 0 on success, 1 on failure, 130 when interrupted.

use std::sync::Arc;

use anyhow::Result;
use hermes_agent::AgentHandle;
use hermes_protocol::{AgentEvent, Op, TurnOutcome};

use crate::app::App;
use crate::args::ChatArgs;
use crate::render::Renderer;
use crate::session::build_agent;

/// Runs one turn and returns the exit code.
pub async fn run(app: &App, args: &ChatArgs, query: &str) -> Result<i32> {
    // Resolve `-s` first: a bad skill name must not leave an empty session behind.
    let text = crate::skills_cmd::preload_message(
        &app.home,
        args.skills.as_deref().unwrap_or_default(),
        query,
    )?;
    // MCP elicitation asks the user only when there is one at a terminal.
    let elicitor = std::io::IsTerminal::is_terminal(&std::io::stdin()).then(|| {
        Arc::new(crate::mcp_elicit::TerminalElicitor::new())
            as Arc<dyn hermes_mcp::elicitation::Elicitor>
    });
    // `clarify` asks only when someone is at a terminal; otherwise it returns its notice.
    let clarifier = std::io::IsTerminal::is_terminal(&std::io::stdin()).then(|| {
        Arc::new(crate::clarify_prompt::TerminalClarifier::new())
            as Arc<dyn hermes_tools::Clarifier>
    });
    let (agent, info) = build_agent(
        app,
        args,
        Arc::new(hermes_tools::FixedApprover(hermes_tools::Approval::Deny)),
        elicitor,
        clarifier,
    )
    .await?;
    let mut handle = AgentHandle::spawn(agent);
    let (display, warnings) =
        crate::display::Display::load(&app.home, &app.config.display, args.quiet, args.verbose);
    if !args.json {
        for w in warnings {
            eprintln!("warning: {w}");
        }
    }
    let mut renderer = display.renderer(Renderer::auto_mode(args.json));
    handle.submit(Op::UserInput { text });
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
    // The session summary (tokens and cost) goes to stderr with the other progress output.
    if !args.quiet {
        eprintln!("{}", info.usage_now(&handle.session_id()));
    }
    let _ = handle.shutdown().await;
    Ok(code)
}
