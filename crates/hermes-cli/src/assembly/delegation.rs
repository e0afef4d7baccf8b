//! `delegate_task` as the CLI (and the gateway, which builds its agents from the same kit,
//! and cron runs) offer it: `config.yaml` `delegation:` settings, the parent's prompt profile and tool-use
//! discipline setting, and a client of its own when `delegation.provider` names another
//! provider (FEATURES §4).

use std::sync::Arc;

use hermes_agent::{DELEGATE_TASK, DelegateTool, DelegationSettings};
use hermes_context::PromptProfile;
use hermes_llm::{ModelClient, ResolveInputs};
use hermes_protocol::config::ModelConfig;
use hermes_tools::Tool;

use crate::assembly::app::App;

/// The subagent settings from `config.yaml`; `compact` is the parent's prompt profile
/// choice when known (`None`: automatic by the context window).
pub fn settings(app: &App, compact: Option<bool>) -> DelegationSettings {
    DelegationSettings {
        prompt_profile: compact.map(|c| {
            if c {
                PromptProfile::Compact
            } else {
                PromptProfile::Full
            }
        }),
        tool_use_enforcement: app.config.agent.tool_use_enforcement_setting(),
        ..DelegationSettings::from_config(&app.config.delegation)
    }
}

/// Replaces the `delegate_task` tool in `tools` (if selected) by one with the session's
/// settings, on the `delegation.provider` client when one is configured and can be built
/// (otherwise the parent's client, with a warning).
pub fn configure(app: &App, compact: bool, tools: &mut [Arc<dyn Tool>]) {
    let Some(slot) = tools.iter_mut().find(|t| t.spec().name == DELEGATE_TASK) else {
        return;
    };
    let mut tool = DelegateTool::new(settings(app, Some(compact)));
    if let Some(client) = provider_client(app) {
        tool = tool.with_client(client);
    }
    *slot = Arc::new(tool);
}

/// The `delegate_task` tool of cron runs (their subagents inherit the run's denial of
/// dangerous commands).
pub fn cron_tool(app: &App, compact: bool) -> Arc<dyn Tool> {
    let mut tool = DelegateTool::new(settings(app, Some(compact)));
    if let Some(client) = provider_client(app) {
        tool = tool.with_client(client);
    }
    Arc::new(tool)
}

/// A client for `delegation.provider` (with `delegation.model`, `delegation.base_url` and
/// `delegation.api_key`),
/// or `None` when no provider is configured or it cannot be resolved (reported on stderr).
fn provider_client(app: &App) -> Option<Arc<dyn ModelClient>> {
    let delegation = &app.config.delegation;
    let provider = delegation
        .provider
        .clone()
        .filter(|p| !p.trim().is_empty())?;
    let section = ModelConfig {
        provider: Some(provider.clone()),
        default: delegation.model.clone(),
        base_url: delegation.base_url.clone(),
        api_key: delegation.api_key.clone().filter(|k| !k.trim().is_empty()),
        ..ModelConfig::default()
    };
    let inputs = ResolveInputs {
        provider: Some(provider.clone()),
        model: delegation.model.clone(),
        base_url: delegation.base_url.clone(),
        config: section.clone(),
        env: app.env.clone(),
        local_model_available: None,
        file: Some(app.config.clone()),
        pool_keys: hermes_llm::runtime::pool_keys(&app.home.auth_file()),
    };
    let built = hermes_llm::resolve(&inputs)
        .map_err(|e| e.to_string())
        .and_then(|rt| {
            hermes_llm::build_client_with(&rt, &app.client_options(&section))
                .map_err(|e| e.to_string())
        });
    match built {
        Ok(client) => Some(client),
        Err(e) => {
            errln!(
                "warning: delegation.provider {provider} skipped ({e}); subagents use the session's model"
            );
            None
        }
    }
}
