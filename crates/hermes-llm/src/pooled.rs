//! A [`ModelClient`] over a credential pool (FEATURES §2): one inner client per API key; each
//! call takes a key from the [`CredentialPool`] by its strategy; a failure that is the key's
//! fault (401, 402, 429: [`LlmError::rotate_credential`]) puts that key on cooldown and is
//! returned, so the turn loop's [`crate::fallback::RecoveryPolicy`] answers
//! `RotateCredential` and the next call takes another key. The pool's bookkeeping is written
//! to the state file after every change (no secrets in it).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::client::{ChatRequest, EventStream, ModelClient};
use crate::credentials::{CredentialPool, save_state};
use crate::error::{ErrorClass, LlmError};

/// Unix seconds now (0 if the clock is before 1970).
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A client that spreads calls over several keys of one provider.
pub struct PooledClient {
    clients: Vec<Arc<dyn ModelClient>>,
    pool: Mutex<CredentialPool>,
    state_file: Option<PathBuf>,
}

impl std::fmt::Debug for PooledClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledClient")
            .field("pool", &*self.lock())
            .field("state_file", &self.state_file)
            .finish()
    }
}

impl PooledClient {
    /// Wraps `clients[i]`, which must use `pool.credentials[i]`'s key. Errors (class
    /// `format_error`) when the counts differ or the pool is empty. `state_file` receives the
    /// bookkeeping after every change (`None`: not persisted).
    pub fn new(
        clients: Vec<Arc<dyn ModelClient>>,
        pool: CredentialPool,
        state_file: Option<PathBuf>,
    ) -> Result<PooledClient, LlmError> {
        if clients.is_empty() || clients.len() != pool.credentials.len() {
            return Err(LlmError::new(
                ErrorClass::FormatError,
                None,
                format!(
                    "credential pool of {} has {} keys but {} clients",
                    pool.provider,
                    pool.credentials.len(),
                    clients.len()
                ),
            ));
        }
        Ok(PooledClient {
            clients,
            pool: Mutex::new(pool),
            state_file,
        })
    }

    /// A copy of the pool's current state (keys, uses, cooldowns).
    pub fn pool(&self) -> CredentialPool {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, CredentialPool> {
        match self.pool.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn persist(&self, pool: &CredentialPool) {
        if let Some(path) = &self.state_file
            && let Err(e) = save_state(path, pool)
        {
            tracing::warn!(error = %e, path = %path.display(), "could not save credential state");
        }
    }
}

#[async_trait::async_trait]
impl ModelClient for PooledClient {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError> {
        let index = {
            let mut pool = self.lock();
            let Some((index, _)) = pool.acquire_or_soonest(unix_now()) else {
                return Err(LlmError::new(
                    ErrorClass::AuthPermanent,
                    None,
                    "the credential pool has no keys",
                ));
            };
            self.persist(&pool);
            index
        };
        let client = self.clients[index].clone();
        match client.stream(request).await {
            Ok(stream) => Ok(stream),
            Err(e) => {
                if e.rotate_credential() {
                    let mut pool = self.lock();
                    if let Some(cooldown) = pool.report_failure(index, &e, unix_now()) {
                        let label = pool.credentials[index].label.clone();
                        tracing::info!(
                            provider = %pool.provider, key = %label,
                            cooldown_s = cooldown.as_secs(), class = e.class.as_str(),
                            "API key put on cooldown"
                        );
                    }
                    self.persist(&pool);
                }
                Err(e)
            }
        }
    }

    fn provider(&self) -> &str {
        self.clients[0].provider()
    }

    fn model(&self) -> &str {
        self.clients[0].model()
    }

    fn base_url(&self) -> &str {
        self.clients[0].base_url()
    }

    fn context_window(&self) -> Option<u64> {
        self.clients[0].context_window()
    }

    fn spare_credentials(&self) -> u32 {
        u32::try_from(self.clients.len().saturating_sub(1)).unwrap_or(u32::MAX)
    }
}
