//! `hermes doctor`'s Matrix line: whether the settings read, and what the homeserver says
//! (10 s bound), without logging in or changing anything.

use std::time::Duration;

use super::{Level, Report};
use crate::assembly::app::App;

/// Adds the Matrix finding when `MATRIX_HOMESERVER` and a credential are set.
pub(super) async fn check(app: &App, report: &mut Report) {
    let media = app.home.cache_dir().join("media").join("matrix");
    let settings = match hermes_gateway::MatrixSettings::from_env(&app.env, &media) {
        Ok(Some(s)) => s,
        // Settings the adapter refuses are reported by the platforms check.
        Ok(None) | Err(_) => return,
    };
    let mut settings = settings;
    settings.state_file = Some(app.home.root().join("gateway").join("matrix_state.json"));
    let adapter = match hermes_gateway::MatrixAdapter::new(settings) {
        Ok(a) => a,
        Err(e) => {
            report.add(Level::Broken, format!("matrix: {e}"));
            return;
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), adapter.probe()).await {
        Ok(Ok(line)) => report.add(Level::Ok, format!("matrix: {line}")),
        Ok(Err(e @ hermes_gateway::PlatformError::Auth { .. })) => report.add(
            Level::Broken,
            format!("matrix: {e} (check MATRIX_ACCESS_TOKEN)"),
        ),
        Ok(Err(e)) => report.add(Level::Warn, format!("matrix: {e}")),
        Err(_) => report.add(
            Level::Warn,
            format!(
                "matrix: no answer from {} within 10 s",
                adapter.settings().homeserver
            ),
        ),
    }
}
