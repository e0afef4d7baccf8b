//! OAuth 2.1 for Streamable HTTP servers configured `auth: oauth` (MCP authorization spec
//! 2025-11-25), on rmcp's `auth` feature: protected-resource and authorization-server
//! metadata discovery, pre-registered clients or dynamic client registration, PKCE (S256)
//! authorization-code flow and token refresh are the SDK's; hermes adds the token file
//! (`HERMES_HOME/mcp-tokens/<server>.json`, mode 0600), the `WWW-Authenticate` probe that
//! feeds discovery, and the two ways of getting the user's approval ([`Approver`]): a loopback
//! redirect listener for `hermes mcp login` and a headless redirect follower for
//! authorization servers that approve without a user (the conformance suite's).

use std::path::{Path, PathBuf};

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, CredentialStore,
    OAuthClientConfig, OAuthState, StoredCredentials,
};

use crate::config::OAuthSettings;

/// The client name sent in dynamic client registration.
pub const CLIENT_NAME: &str = "hermes";

/// Why an OAuth step failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The SDK's discovery, registration, token exchange or refresh failed.
    #[error("OAuth: {0}")]
    Auth(#[from] AuthError),
    /// No stored token: the user has to authorize first.
    #[error("not authorized yet: run `hermes mcp login {0}`")]
    NotLoggedIn(String),
    /// Reading or writing the token file, or the loopback listener.
    #[error("OAuth {what}: {source}")]
    Io {
        /// What was being done (names the file or address).
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The authorization step did not end in a redirect carrying a code.
    #[error("OAuth authorization: {0}")]
    Approval(String),
}

/// The token file of server `server` under `dir` (`HERMES_HOME/mcp-tokens`): `<server>.json`
/// with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn token_path(dir: &Path, server: &str) -> PathBuf {
    let safe: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{safe}.json"))
}

/// rmcp credentials (client id, token response with refresh token, granted scopes, issuer)
/// kept as JSON in one file, written atomically with mode 0600 (parent created 0700).
#[derive(Debug, Clone)]
pub struct FileTokenStore {
    path: PathBuf,
}

impl FileTokenStore {
    /// A store backed by `path` (need not exist yet).
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// The file this store reads and writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, what: &str, e: impl std::fmt::Display) -> AuthError {
        AuthError::CredentialStoreError(format!("{what} {}: {e}", self.path.display()))
    }
}

#[async_trait::async_trait]
impl CredentialStore for FileTokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match tokio::fs::read(&self.path).await {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| self.err("parsing", e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.err("reading", e)),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let json = serde_json::to_vec_pretty(&credentials).map_err(|e| self.err("encoding", e))?;
        let path = self.path.clone();
        let tmp = path.with_extension("json.tmp");
        let res = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)?;
            }
            let _ = std::fs::remove_file(&tmp);
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            std::io::Write::write_all(&mut f, &json)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })
        .await
        .map_err(|e| self.err("writing", e))?;
        res.map_err(|e| self.err("writing", e))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match tokio::fs::remove_file(&self.path).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.err("removing", e)),
            _ => Ok(()),
        }
    }
}

/// Gets the resource owner's approval of an authorization URL and returns the URL the
/// authorization server redirected back to (it carries `code` and `state`).
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// The redirect URI registered with the authorization server and sent with the request.
    fn redirect_uri(&self) -> String;
    /// Has `auth_url` approved and returns the callback URL.
    ///
    /// # Errors
    /// [`OAuthError::Approval`] when no redirect with a code arrives.
    async fn approve(&self, auth_url: &str) -> Result<String, OAuthError>;
}

/// Sends an unauthenticated `initialize` to `url` and returns the `WWW-Authenticate` header
/// of a 401 answer (which may name the protected-resource metadata and the needed scope);
/// `None` for any other answer or a network error (discovery then uses the well-known URLs).
pub async fn probe_challenge(url: &str) -> Option<String> {
    crate::server::ensure_crypto_provider();
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}}
    });
    let resp = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .ok()?;
    if resp.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    resp.headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

async fn manager_for(url: &str, store: FileTokenStore) -> Result<AuthorizationManager, OAuthError> {
    crate::server::ensure_crypto_provider();
    let mut manager = AuthorizationManager::new_allowing_private_addresses(url).await?;
    manager.set_credential_store(store);
    Ok(manager)
}

/// Runs the whole authorization of server `server` at `url`: probe for the challenge,
/// discovery, client registration (pre-registered `client_id` first, then the
/// `client_metadata_url` document when the server supports client ID metadata documents,
/// else dynamic registration), the authorization request with PKCE approved through `approver`, and the
/// code exchange. The tokens end up in `store`.
///
/// # Errors
/// Any failed step, as [`OAuthError`].
pub async fn authorize(
    url: &str,
    settings: &OAuthSettings,
    store: FileTokenStore,
    approver: &dyn Approver,
) -> Result<(), OAuthError> {
    let challenge = probe_challenge(url).await;
    let manager = manager_for(url, store).await?;
    let mut request =
        AuthorizationRequest::new(approver.redirect_uri()).with_client_name(CLIENT_NAME);
    if let Some(c) = challenge {
        request = request.with_challenge(c);
    }
    if !settings.scopes.is_empty() {
        request = request.with_scopes(settings.scopes.iter().cloned());
    }
    if let Some(cimd) = &settings.client_metadata_url {
        request = request.with_client_metadata_url(cimd.clone());
    }
    if let Some(id) = &settings.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &settings.client_secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    let mut state = OAuthState::Unauthorized(manager);
    state.start_authorization(request).await?;
    let auth_url = state.get_authorization_url().await?;
    let callback = approver.approve(&auth_url).await?;
    state.handle_callback_url(&callback).await?;
    Ok(())
}

/// An HTTP client for server `server` at `url` that sends the stored access token, refreshes
/// it when it expires or is rejected, and saves refreshed tokens back to `store`.
///
/// # Errors
/// [`OAuthError::NotLoggedIn`] when `store` holds no token; discovery errors otherwise.
pub async fn authorized_client(
    server: &str,
    url: &str,
    settings: &OAuthSettings,
    store: FileTokenStore,
) -> Result<AuthClient<reqwest::Client>, OAuthError> {
    let mut manager = manager_for(url, store).await?;
    let challenge = probe_challenge(url).await;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await?;
    manager.set_metadata(resolution.metadata);
    if !manager.initialize_from_store().await? {
        return Err(OAuthError::NotLoggedIn(server.to_string()));
    }
    if let (Some(id), Some(secret)) = (&settings.client_id, &settings.client_secret) {
        // The redirect URI plays no part in refreshing; the SDK only needs a valid one.
        let redirect = settings
            .redirect_uri
            .clone()
            .unwrap_or_else(|| "http://127.0.0.1/callback".to_string());
        manager.configure_client(
            OAuthClientConfig::new(id.clone(), redirect)
                .with_client_secret(secret.clone())
                .with_scopes(settings.scopes.clone()),
        )?;
    }
    Ok(AuthClient::new(reqwest::Client::new(), manager))
}

/// Approval without a user: requests the authorization URL without following redirects and
/// returns the `Location` of the redirect — for authorization servers that approve at once
/// (test and conformance servers).
#[derive(Debug, Clone)]
pub struct HeadlessApprover {
    /// The redirect URI to register (never contacted).
    pub redirect_uri: String,
}

#[async_trait::async_trait]
impl Approver for HeadlessApprover {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    async fn approve(&self, auth_url: &str) -> Result<String, OAuthError> {
        crate::server::ensure_crypto_provider();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| OAuthError::Approval(e.to_string()))?;
        let resp = client
            .get(auth_url)
            .send()
            .await
            .map_err(|e| OAuthError::Approval(format!("GET {auth_url}: {e}")))?;
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                OAuthError::Approval(format!(
                    "the authorization endpoint answered {} without a redirect",
                    resp.status()
                ))
            })?;
        Ok(location.to_string())
    }
}

pub use crate::oauth_loopback::{LoopbackApprover, ShowUrl};
