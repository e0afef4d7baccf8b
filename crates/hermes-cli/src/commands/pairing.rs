//! `hermes pairing {list,approve,revoke,clear-pending}`: DM pairing codes of the gateway
//! (FEATURES §1 Gateway), in the files Python Hermes shares (`hermes_gateway::auth::pairing`).
//! As in Python, approving a user on a platform that has an allowlist
//! (`TELEGRAM_ALLOWED_USERS`, …, set in the environment or `.env`) also adds them to it in
//! `HERMES_HOME/.env`, and revoking removes them.

use anyhow::{Context, Result};
use clap::Subcommand;
use hermes_gateway::auth::PairingStore;
use hermes_gateway::auth::pairing::{
    CODE_TTL_S, allowlist_env, allowlist_with, allowlist_without, now_unix,
};

use crate::assembly::app::App;

/// `hermes pairing …`
#[derive(Debug, Subcommand)]
pub enum PairingCmd {
    /// Pending codes and approved users.
    List,
    /// Approve the user who received `code` on `platform`.
    Approve {
        /// Platform name (telegram, discord, slack, …).
        platform: String,
        /// The 8-character code the user received.
        code: String,
    },
    /// Remove an approved user.
    Revoke {
        /// Platform name.
        platform: String,
        /// The user's platform id (as shown by `hermes pairing list`).
        user_id: String,
    },
    /// Drop every pending code.
    ClearPending,
    /// A Python Hermes `pairing` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

fn named(user_id: &str, name: Option<&str>) -> String {
    format!(
        "{user_id}{}",
        name.map(|n| format!(" ({n})")).unwrap_or_default()
    )
}

/// Keeps the platform's allowlist in `.env` in step with a pairing change, as Python does:
/// `change` gets the current list and returns the new one (`None`: no change; `""`: remove
/// the variable). Platforms without an allowlist variable, or with none set, are left open.
fn sync_allowlist(
    app: &App,
    platform: &str,
    change: impl FnOnce(&str) -> Option<String>,
) -> Result<()> {
    let Some(var) = allowlist_env(platform) else {
        return Ok(());
    };
    let current = app.env.get(var).map(|v| v.trim()).unwrap_or("");
    let Some(new) = change(current) else {
        return Ok(());
    };
    let path = app.home.env_file();
    if new.is_empty() {
        crate::setup::write::remove_env_var(&path, var)
    } else {
        crate::setup::write::set_env_var(&path, var, &new)
    }
    .with_context(|| format!("updating {var} in {}", path.display()))?;
    println!(
        "{var} in {} updated (the allowlist follows pairing)",
        path.display()
    );
    Ok(())
}

/// Runs `hermes pairing …`.
pub fn run(profile: Option<&str>, action: &PairingCmd) -> Result<i32> {
    let app = App::load(profile)?;
    let shared = app.open_store()?;
    let store = PairingStore::for_store(app.home.root(), &shared);
    store.migrate()?;
    let now = now_unix();
    match action {
        PairingCmd::Other(words) => Ok(crate::commands::redirect::answer::<PairingCmd>(
            &["pairing"],
            words,
        )),
        PairingCmd::List => {
            let overview = store.overview(now)?;
            if overview.pending.is_empty() && overview.approved.is_empty() {
                println!("no pairing codes and no paired users");
                return Ok(0);
            }
            println!("pending codes (codes are stored hashed; shown: the start of the hash):");
            if overview.pending.is_empty() {
                println!("  (none)");
            }
            for (platform, p) in &overview.pending {
                let left = (p.created_at + CODE_TTL_S).saturating_sub(now).div_ceil(60);
                println!(
                    "  {platform:<10} {}  user {}  expires in {left} min",
                    p.shown,
                    named(&p.user_id, p.user_name.as_deref())
                );
            }
            println!("approved users:");
            if overview.approved.is_empty() {
                println!("  (none)");
            }
            for (platform, a) in &overview.approved {
                println!(
                    "  {platform:<10} {}",
                    named(&a.user_id, a.user_name.as_deref())
                );
            }
            Ok(0)
        }
        PairingCmd::Approve { platform, code } => {
            let platform = platform.trim().to_ascii_lowercase();
            let user = store.approve(&platform, code, now)?;
            println!(
                "approved {platform} user {}",
                named(&user.user_id, user.user_name.as_deref())
            );
            sync_allowlist(&app, &platform, |cur| allowlist_with(cur, &user.user_id))?;
            Ok(0)
        }
        PairingCmd::Revoke { platform, user_id } => {
            let platform = platform.trim().to_ascii_lowercase();
            if store.revoke(&platform, user_id)? {
                println!("revoked {platform} user {user_id}");
                sync_allowlist(&app, &platform, |cur| {
                    allowlist_without(cur, user_id.trim())
                })?;
                Ok(0)
            } else {
                errln!("{platform} user {user_id} was not approved");
                Ok(1)
            }
        }
        PairingCmd::ClearPending => {
            let n = store.clear_pending()?;
            println!("cleared {n} pending pairing code(s)");
            Ok(0)
        }
    }
}
