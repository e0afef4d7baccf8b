//! The gateway's platforms as `hermes gateway status` and `/platforms` show them: which
//! platforms are configured, which credentials are present, the access rules, pending
//! pairing codes, routed chats, whether the cron scheduler runs inside the gateway, and the
//! gateway replicas on the session store with the leaders of single-connection platforms
//! (`hermes_gateway::status`).

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::status::{GatewayStatus, pairing_overview};
use hermes_protocol::HermesHome;
use hermes_protocol::config::Config;
use hermes_store::SessionStore;

/// The status text of the gateway of `home` (settings `config`, environment `env` with
/// `.env` merged, profile `profile`), with the warnings about its settings.
///
/// # Errors
/// A gateway setting that does not parse, or `state.db` / the pairing files unreadable.
pub fn status_text(
    home: &HermesHome,
    config: &Config,
    env: &BTreeMap<String, String>,
    profile: Option<&str>,
    store: &SessionStore,
) -> Result<(String, Vec<String>)> {
    let (gateway, warnings) = GatewayConfig::from_config(config, env, profile)
        .map_err(|e| anyhow!("{}: {e}", home.config_file().display()))?;
    let routed = store.count_session_keys()?;
    let pairing = pairing_overview(home, store)?;
    let mut status = GatewayStatus::collect(&gateway, env, &pairing, routed);
    status.cron_scheduler = hermes_cron::CronSettings::scheduler_enabled(config.cron.as_ref())
        .map_err(|e| anyhow!("{}: {e}", home.config_file().display()))?;
    status.replicas = store.leases(hermes_gateway::replica::REPLICA_PREFIX)?;
    status.leaders = store.leases(hermes_gateway::replica::LEADER_PREFIX)?;
    status.leases_read_at = hermes_gateway::replica::unix_now();
    Ok((status.to_string(), warnings))
}
