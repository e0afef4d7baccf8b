//! Text views of what `HERMES_HOME` holds, shared by the subcommands and the REPL's slash
//! commands so both print the same thing: memory usage (`hermes memory show`, `/memory`),
//! installed skills and `-s` preloading (`hermes skills list`, `/skills`, `chat -s`), cron jobs
//! (`/cron`), session rows (`hermes sessions list`, `/sessions`, `/resume`, `/usage`), usage
//! insights (`hermes insights`, `/insights`), the gateway's platforms (`hermes gateway
//! status`, `/platforms`), SOUL.md presets (`/personality`), and the editor hand-off
//! (`hermes memory edit`, `hermes config edit`, the REPL's compose key).
//!
//! Depends on no other module of the CLI.

pub mod cron;
pub mod editor;
pub mod insights;
pub mod memory;
pub mod personality;
pub mod platforms;
pub mod sessions;
pub mod skills;
