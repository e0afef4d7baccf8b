//! `hermes debug prompt [--session ID] [--json]`: the system prompt layer by layer, in bytes
//! and estimated tokens, and the tool schemas' share of what is sent before the first
//! message.
//!
//! The numbers are the prompt builder's: the layers are `hermes_context::BuiltPrompt`'s
//! sections as `crate::commands::prompt_size::measure` builds them for a new session (the
//! same assembly a session uses), sized with `BuiltPrompt::layer_sizes` so they add up to
//! the prompt's bytes and to the token estimate the agent budgets with. With `--session`, the
//! session's stored prompt is split along a prompt rebuilt for its model, provider, start
//! date and directory (`BuiltPrompt::split_stored`); layers whose text changed since (memory,
//! skills, files) are marked, and a prompt with nothing in common is shown as one block.

use anyhow::Result;
use hermes_context::{LayerSize, TokenEstimator};

use super::table::{Align, render};
use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::commands::prompt_size::{measure, spec_bytes};

/// One tool schema's size.
struct ToolSize {
    name: String,
    bytes: usize,
    tokens: u64,
}

/// Where the measured prompt comes from.
enum Origin {
    /// A new session's prompt, built now.
    New,
    /// A stored session's prompt; `split` tells whether it could be split into layers,
    /// `identical` whether it equals today's rebuild byte for byte, and `unbuilt` why there
    /// is no rebuild to compare with (no model configured, …).
    Stored {
        id: String,
        split: bool,
        identical: bool,
        unbuilt: Option<String>,
    },
}

/// Runs `hermes debug prompt`; returns the exit code.
pub(super) fn run(
    profile: Option<&str>,
    chat: &ChatArgs,
    session: Option<&str>,
    json: bool,
) -> Result<i32> {
    let app = App::load(profile)?;
    let record = match session {
        Some(key) => {
            let store = app.open_store()?;
            let Some(record) = store.find_session(key)? else {
                errln!("error: no session matches `{key}`");
                return Ok(1);
            };
            Some(record)
        }
        None => None,
    };
    // A stored prompt is still measured when no prompt can be built here (no model
    // configured): as one block.
    let measured = match measure(&app, chat) {
        Ok(m) => Ok(m),
        Err(e) if record.is_some() => {
            let text = format!("{e:#}");
            let first = text.lines().next().unwrap_or_default();
            Err(first.split(". ").next().unwrap_or(first).to_string())
        }
        Err(e) => return Err(e),
    };
    let estimator = TokenEstimator::new();
    let tools: Vec<ToolSize> = measured
        .as_ref()
        .map(|m| m.specs.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|spec| ToolSize {
            name: spec.name.clone(),
            bytes: spec_bytes(spec),
            tokens: estimator.estimate_tool(spec),
        })
        .collect();
    let (model, provider, text, layers, origin) = match (&record, &measured) {
        (None, Ok(m)) => (
            m.model.clone(),
            m.provider.clone(),
            m.built.text.clone(),
            m.built.layer_sizes(),
            Origin::New,
        ),
        (None, Err(e)) => anyhow::bail!("{e}"),
        (Some(r), measured) => {
            let rebuilt = measured.as_ref().map(|m| {
                let mut source = m.source.clone();
                if let Some(cwd) = r.cwd.as_deref().map(std::path::PathBuf::from)
                    && cwd.is_dir()
                {
                    source = source.for_cwd(cwd);
                }
                let date = r.started_at.with_timezone(&chrono::Local).date_naive();
                source.built_on(date, &r.model, &r.provider, &m.tool_names())
            });
            let stored = r.system_prompt.clone();
            let split = rebuilt.as_ref().ok().and_then(|b| b.split_stored(&stored));
            let origin = Origin::Stored {
                id: r.id.clone(),
                split: split.is_some(),
                identical: rebuilt.as_ref().is_ok_and(|b| b.text == stored),
                unbuilt: rebuilt.as_ref().err().map(|e| e.to_string()),
            };
            let layers = split.unwrap_or_else(|| {
                vec![LayerSize {
                    kind: None,
                    name: "stored prompt".to_string(),
                    start: 0,
                    bytes: stored.len(),
                    tokens: estimator.estimate_text(&stored),
                    same_as_build: false,
                }]
            });
            (r.model.clone(), r.provider.clone(), stored, layers, origin)
        }
    };
    let prompt_total = (text.len(), estimator.estimate_text(&text));
    let tools_total = (
        tools.iter().map(|t| t.bytes).sum::<usize>(),
        tools.iter().map(|t| t.tokens).sum::<u64>(),
    );
    let all = (
        prompt_total.0 + tools_total.0,
        prompt_total.1 + tools_total.1,
    );
    let share = |part: usize, whole: usize| {
        if whole == 0 {
            0.0
        } else {
            part as f64 / whole as f64
        }
    };
    let tool_share = share(tools_total.0, all.0);
    let profile_name = match &measured {
        Ok(m) if m.compact => "compact",
        Ok(_) => "full",
        Err(_) => "unknown",
    };

    if json {
        let origin_json = match &origin {
            Origin::New => serde_json::json!({"kind": "new_session"}),
            Origin::Stored {
                id,
                split,
                identical,
                unbuilt,
            } => serde_json::json!({
                "kind": "stored_session",
                "session_id": id,
                "split_into_layers": split,
                "identical_to_rebuild": identical,
                "not_rebuilt_because": unbuilt,
            }),
        };
        let value = serde_json::json!({
            "model": model,
            "provider": provider,
            "profile": profile_name,
            "prompt": origin_json,
            "system_prompt": {
                "bytes": prompt_total.0,
                "tokens": prompt_total.1,
                "layers": layers.iter().map(|l| serde_json::json!({
                    "name": l.name,
                    "bytes": l.bytes,
                    "tokens": l.tokens,
                    "same_as_build": l.same_as_build,
                })).collect::<Vec<_>>(),
            },
            "tools": {
                "count": tools.len(),
                "bytes": tools_total.0,
                "tokens": tools_total.1,
                "share_of_bytes": tool_share,
                "schemas": tools.iter().map(|t| serde_json::json!({
                    "name": t.name, "bytes": t.bytes, "tokens": t.tokens,
                })).collect::<Vec<_>>(),
            },
            "total": {"bytes": all.0, "tokens": all.1},
            "mcp_tools_counted": false,
        });
        outln!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(0);
    }

    // A stored session's model was named by whoever used `/model` in its chat (and the
    // reason a prompt could not be built may quote it): its escape sequences are shown.
    let model = crate::render::style::visible_controls(&model, "");
    let provider = crate::render::style::visible_controls(&provider, "");
    let profile_note = if measured.is_ok() {
        format!(" ({profile_name} prompt profile)")
    } else {
        String::new()
    };
    outln!("{model} on {provider}{profile_note}; tokens are estimates (~4 chars each)");
    match &origin {
        Origin::New => outln!("the system prompt a new session would get now"),
        Origin::Stored {
            id,
            split,
            identical,
            unbuilt,
        } => {
            outln!("the stored system prompt of session {id}");
            if let Some(why) = unbuilt {
                let why = crate::render::style::visible_controls(why, "");
                outln!(
                    "(shown as one block: no prompt could be built here to split it along: {why})"
                );
            } else if *identical {
                outln!("(identical to the prompt the builder gives for it today)");
            } else if *split {
                outln!(
                    "(split along today's build for its model, date and directory; `*` = text changed since)"
                );
            } else {
                outln!(
                    "(nothing in common with today's build for it, so shown as one block: it was written by another program or version)"
                );
            }
        }
    }
    outln!();
    let pct = |part: usize| format!("{:.1}%", 100.0 * share(part, prompt_total.0));
    let mut rows: Vec<Vec<String>> = layers
        .iter()
        .map(|l| {
            let mark = if l.same_as_build || matches!(origin, Origin::New) {
                ""
            } else {
                " *"
            };
            vec![
                format!("{}{mark}", l.name),
                l.bytes.to_string(),
                l.tokens.to_string(),
                pct(l.bytes),
            ]
        })
        .collect();
    rows.push(vec![
        "total".to_string(),
        prompt_total.0.to_string(),
        prompt_total.1.to_string(),
        pct(prompt_total.0),
    ]);
    outln!(
        "{}",
        render(
            &[
                ("System prompt layer", Align::Left),
                ("bytes", Align::Right),
                ("tokens", Align::Right),
                ("share", Align::Right),
            ],
            &rows,
            0,
        )
    );
    outln!();
    let mut sorted: Vec<&ToolSize> = tools.iter().collect();
    sorted.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
    let mut rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|t| vec![t.name.clone(), t.bytes.to_string(), t.tokens.to_string()])
        .collect();
    rows.push(vec![
        "total".to_string(),
        tools_total.0.to_string(),
        tools_total.1.to_string(),
    ]);
    let title = match origin {
        Origin::New => format!("Tool schemas ({})", tools.len()),
        Origin::Stored { .. } => format!("Tool schemas ({}, as configured now)", tools.len()),
    };
    outln!(
        "{}",
        render(
            &[
                (title.as_str(), Align::Left),
                ("bytes", Align::Right),
                ("tokens", Align::Right),
            ],
            &rows,
            0,
        )
    );
    outln!();
    outln!(
        "{}",
        render(
            &[
                ("Before the first message", Align::Left),
                ("bytes", Align::Right),
                ("tokens", Align::Right),
            ],
            &[
                vec![
                    "system prompt".to_string(),
                    prompt_total.0.to_string(),
                    prompt_total.1.to_string()
                ],
                vec![
                    format!("tool schemas ({:.1}% of the bytes)", 100.0 * tool_share),
                    tools_total.0.to_string(),
                    tools_total.1.to_string()
                ],
                vec!["total".to_string(), all.0.to_string(), all.1.to_string()],
            ],
            0,
        )
    );
    if measured.as_ref().is_ok_and(|m| m.mcp_configured) {
        outln!("(tools of MCP servers join at session start and are not counted here)");
    }
    Ok(0)
}
