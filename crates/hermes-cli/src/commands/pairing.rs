//! `hermes pairing {list,approve,revoke}`: DM pairing codes of the gateway (FEATURES §1
//! Gateway).

use anyhow::Result;
use clap::Subcommand;
use hermes_gateway::auth::PairingStore;
use hermes_gateway::auth::pairing::{CODE_TTL_S, now_unix};

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
    /// A Python Hermes `pairing` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Runs `hermes pairing …`.
pub fn run(profile: Option<&str>, action: &PairingCmd) -> Result<i32> {
    let app = App::load(profile)?;
    let store = PairingStore::new(PairingStore::dir_for_home(app.home.root()));
    let now = now_unix();
    match action {
        PairingCmd::Other(words) => Ok(crate::commands::redirect::answer(&["pairing"], words)),
        PairingCmd::List => {
            let overview = store.overview(now)?;
            if overview.pending.is_empty() && overview.approved.is_empty() {
                println!("no pairing codes and no paired users");
                return Ok(0);
            }
            println!("pending codes:");
            if overview.pending.is_empty() {
                println!("  (none)");
            }
            for (platform, p) in &overview.pending {
                let left = (p.created_at + CODE_TTL_S).saturating_sub(now).div_ceil(60);
                println!(
                    "  {platform:<10} {}  user {}{}  expires in {left} min",
                    p.code,
                    p.user_id,
                    p.user_name
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                );
            }
            println!("approved users:");
            if overview.approved.is_empty() {
                println!("  (none)");
            }
            for (platform, a) in &overview.approved {
                println!(
                    "  {platform:<10} {}{}",
                    a.user_id,
                    a.user_name
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                );
            }
            Ok(0)
        }
        PairingCmd::Approve { platform, code } => {
            let user = store.approve(platform, code, now)?;
            println!(
                "approved {platform} user {}{}",
                user.user_id,
                user.user_name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            );
            Ok(0)
        }
        PairingCmd::Revoke { platform, user_id } => {
            if store.revoke(platform, user_id)? {
                println!("revoked {platform} user {user_id}");
                Ok(0)
            } else {
                eprintln!("{platform} user {user_id} was not approved");
                Ok(1)
            }
        }
    }
}
