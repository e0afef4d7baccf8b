//! `hermes mcp login|logout <server>`: the interactive OAuth authorization of an
//! `auth: oauth` Streamable HTTP server (issue 5). The flow itself is
//! [`hermes_mcp::oauth::authorize`]; this front end prints the URL and waits on the loopback
//! redirect listener.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use hermes_mcp::config::{ServerSpec, Transport};
use hermes_mcp::oauth::{self, FileTokenStore, LoopbackApprover};

use crate::assembly::app::App;

/// How long `hermes mcp login` waits for the browser's redirect.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);

fn store(app: &App, name: &str) -> FileTokenStore {
    FileTokenStore::new(oauth::token_path(&app.home.root().join("mcp-tokens"), name))
}

/// Runs the authorization of server `name`; exit code 0 when tokens were stored.
///
/// # Errors
/// An unknown server, one without `auth: oauth`, or a failed or timed-out authorization.
pub async fn login(app: &App, specs: &[ServerSpec], name: &str) -> Result<i32> {
    let Some(spec) = specs.iter().find(|s| s.name == name) else {
        bail!("no MCP server named `{name}` in config.yaml (see `hermes mcp list`)");
    };
    let Transport::Http {
        url,
        oauth: Some(settings),
        ..
    } = &spec.transport
    else {
        bail!(
            "MCP server `{name}` is not configured with `auth: oauth` (a `url:` server needs it)"
        );
    };
    let approver = LoopbackApprover::bind(
        settings.redirect_uri.as_deref(),
        Arc::new(|u: &str| {
            outln!("Open this URL in a browser to authorize hermes:\n\n  {u}\n");
            outln!("Waiting for the authorization server to redirect back…");
        }),
    )
    .await?;
    let store = store(app, name);
    let path = store.path().to_path_buf();
    match tokio::time::timeout(
        LOGIN_WAIT,
        oauth::authorize(url, settings, store, &approver),
    )
    .await
    {
        Err(_) => bail!(
            "no redirect arrived within {} s; run `hermes mcp login {name}` again",
            LOGIN_WAIT.as_secs()
        ),
        Ok(Err(e)) => bail!("MCP server `{name}`: {e}"),
        Ok(Ok(())) => {
            outln!("authorized; tokens saved to {}", path.display());
            Ok(0)
        }
    }
}

/// Removes the stored tokens of server `name`.
///
/// # Errors
/// The token file exists but cannot be removed.
pub async fn logout(app: &App, name: &str) -> Result<i32> {
    let store = store(app, name);
    match tokio::fs::remove_file(store.path()).await {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            bail!("removing {}: {e}", store.path().display())
        }
        _ => {}
    }
    outln!("forgot the OAuth tokens of `{name}`");
    Ok(0)
}
