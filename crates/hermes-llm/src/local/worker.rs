//! The inference thread of one [`super::LocalModel`] (ARCHITECTURE §6: local inference runs
//! on a dedicated thread).
//!
//! The thread owns the llama.cpp context for the model's whole life, so consecutive calls
//! of one conversation reuse the KV cache: only the tokens after the longest common prefix
//! with the previous call (system prompt, tools block, earlier turns) are prefilled again.
//! Jobs run one at a time, which also keeps llama.cpp contexts of one model from being
//! created concurrently (not allowed by llama-cpp-2).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio_util::sync::CancellationToken;

use super::engine::{GenerateOptions, Generation, StopReason, Utf8Stream, backend, local_error};
use super::prefix_cache::{self, CacheKey, PromptCacheConfig};
use crate::error::{ErrorClass, LlmError};

/// A saved prefix is loaded only when it covers at least this many tokens more than the
/// live context already holds (smaller gains cost more in file reading than they save).
const MIN_LOAD_GAIN: usize = 32;
/// A prefix is saved only when it spares at least this many tokens of prefill.
const MIN_SAVE_TOKENS: usize = 256;

/// Prompt tokens decoded per llama.cpp batch during prefill.
pub(crate) const PREFILL_BATCH: usize = 512;

/// The loaded model and its fixed settings, shared by the facade and the worker.
pub(crate) struct Shared {
    pub(crate) model: LlamaModel,
    pub(crate) n_ctx: u32,
    /// Threads of a generation step.
    pub(crate) threads: i32,
    /// Threads of a prompt batch (prefill).
    pub(crate) prefill_threads: i32,
    pub(crate) template: Option<LlamaChatTemplate>,
    /// KV cache element type of every context.
    pub(crate) kv_type: llama_cpp_2::context::params::KvCacheType,
    /// The persistent prefix cache, when enabled.
    pub(crate) disk: Option<DiskCache>,
}

/// The persistent prefix cache as the worker uses it: the folder and budget, and the key of
/// this model's states.
pub(crate) struct DiskCache {
    pub(crate) config: PromptCacheConfig,
    pub(crate) key: CacheKey,
}

impl Shared {
    /// Tokens of `text`, special tokens (`<|im_start|>`) parsed; BOS added only when the
    /// model wants one and the rendered template did not already write it.
    pub(crate) fn tokenize(&self, text: &str) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let bos_text = vocab
            .text(vocab.bos())
            .and_then(|c| c.to_str().ok())
            .unwrap_or("");
        let add_special = bos_text.is_empty() || !text.starts_with(bos_text);
        vocab.tokenize(text.as_bytes(), add_special, true)
    }
}

/// One generation request sent to the worker.
pub(crate) struct Job {
    pub(crate) prompt: String,
    pub(crate) options: GenerateOptions,
    pub(crate) cancel: CancellationToken,
    /// Set by the caller when its piece callback asks to stop.
    pub(crate) abort: Arc<AtomicBool>,
    pub(crate) events: Sender<WorkerEvent>,
}

/// What the worker reports back for one job.
pub(crate) enum WorkerEvent {
    /// A chunk of decoded text (complete UTF-8).
    Piece(String),
    /// The job is over.
    Done(Result<Generation, LlmError>),
}

/// The worker loop: runs jobs until every sender is gone.
pub(crate) fn run(shared: Arc<Shared>, jobs: Receiver<Job>) {
    let mut state: Option<Cache<'_>> = None;
    while let Ok(job) = jobs.recv() {
        if state.is_none() {
            match new_context(&shared) {
                Ok(ctx) => {
                    state = Some(Cache {
                        ctx,
                        tokens: Vec::new(),
                    })
                }
                Err(e) => {
                    let _ = job.events.send(WorkerEvent::Done(Err(e)));
                    continue;
                }
            }
        }
        let Some(cache) = state.as_mut() else {
            continue;
        };
        let result = cache.generate(&shared, &job);
        if result.is_err() {
            // A failed decode leaves the KV cache in an unknown state: start over next time.
            cache.reset();
        }
        let _ = job.events.send(WorkerEvent::Done(result));
    }
}

fn new_context(shared: &Shared) -> Result<LlamaContext<'_>, LlmError> {
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(shared.n_ctx))
        .with_n_batch(PREFILL_BATCH as u32)
        .with_n_threads(shared.threads)
        .with_n_threads_batch(shared.prefill_threads)
        .with_type_k(shared.kv_type)
        .with_type_v(shared.kv_type);
    shared
        .model
        .new_context(backend()?, params)
        .map_err(|e| local_error(ErrorClass::Unknown, format!("context: {e}")))
}

/// The context and the tokens whose keys/values it currently holds (positions 0..len).
struct Cache<'m> {
    ctx: LlamaContext<'m>,
    tokens: Vec<LlamaToken>,
}

fn decode_err(e: llama_cpp_2::DecodeError) -> LlmError {
    local_error(ErrorClass::Unknown, format!("llama.cpp decode failed: {e}"))
}

fn batch_err(e: llama_cpp_2::llama_batch::BatchAddError) -> LlmError {
    local_error(ErrorClass::Unknown, format!("llama.cpp batch: {e}"))
}

impl Cache<'_> {
    fn reset(&mut self) {
        self.ctx.clear_kv_cache();
        self.tokens.clear();
    }

    /// Keeps the first `keep` cached positions and drops the rest; falls back to a full
    /// reset when the model's memory cannot drop a tail. Returns the positions kept.
    fn truncate(&mut self, keep: usize) -> usize {
        if keep >= self.tokens.len() {
            return self.tokens.len();
        }
        let removed = u32::try_from(keep)
            .ok()
            .and_then(|p0| self.ctx.clear_kv_cache_seq(Some(0), Some(p0), None).ok())
            .unwrap_or(false);
        if removed {
            self.tokens.truncate(keep);
            keep
        } else {
            self.reset();
            0
        }
    }

    /// Loads the saved prefix sharing the most leading tokens with `tokens` when it beats
    /// the live context by [`MIN_LOAD_GAIN`]; returns how many cached positions are usable
    /// afterwards (the live context's when nothing was loaded). A file that fails to load
    /// leaves an empty context.
    /// An entry that fails its check is dropped from `entries` (and from the folder).
    fn load_saved(
        &mut self,
        disk: &DiskCache,
        entries: &mut Vec<prefix_cache::Entry>,
        tokens: &[i32],
        live: usize,
    ) -> (usize, bool) {
        let Some((entry, shared_len)) = prefix_cache::best_match(entries, tokens) else {
            return (live, false);
        };
        if shared_len < live + MIN_LOAD_GAIN || entry.meta.tokens.len() >= self.ctx.n_ctx() as usize
        {
            return (live, false);
        }
        if !prefix_cache::verify_for_load(&disk.config.dir, entry) {
            let id = entry.id.clone();
            entries.retain(|e| e.id != id);
            return (live, false);
        }
        self.reset();
        let path = prefix_cache::entry_state_path(&disk.config.dir, entry);
        match self
            .ctx
            .state_seq_load_file(&path, 0, entry.meta.tokens.len())
        {
            Ok((loaded, _))
                if loaded
                    .iter()
                    .map(|t| t.0)
                    .eq(entry.meta.tokens.iter().copied()) =>
            {
                self.tokens = loaded;
                tracing::debug!(entry = %entry.id, tokens = shared_len, "prompt cache: prefix loaded");
                (shared_len, true)
            }
            other => {
                tracing::warn!(entry = %entry.id, ok = other.is_ok(), "prompt cache: state file not loadable");
                self.reset();
                (0, false)
            }
        }
    }

    /// Where to save a prefix during this prefill, if anywhere: at the end of the stable
    /// part (`boundary`, the system turn) when no saved entry covers most of it, or at the
    /// point where the best saved entry stops matching (the part stable across sessions)
    /// when no entry ends exactly there.
    fn save_point(
        entries: &[prefix_cache::Entry],
        tokens: &[i32],
        boundary: Option<usize>,
    ) -> Option<usize> {
        let boundary = boundary?;
        let best = prefix_cache::best_match(entries, tokens);
        let covered = best.map(|(_, n)| n).unwrap_or(0);
        if boundary.saturating_sub(covered) >= MIN_SAVE_TOKENS {
            return Some(boundary);
        }
        let (entry, n) = best?;
        let diverges = entry.meta.tokens.len() > n && n < boundary && n >= MIN_SAVE_TOKENS;
        let exact = entries
            .iter()
            .any(|e| e.meta.tokens.len() == n && e.meta.tokens[..] == tokens[..n]);
        (diverges && !exact).then_some(n)
    }

    /// Saves the context's current positions (`tokens`) as a cache entry, then evicts down
    /// to the budget. Failures are logged: the answer does not depend on the cache.
    fn save_prefix(&self, disk: &DiskCache, tokens: &[LlamaToken]) {
        let ids: Vec<i32> = tokens.iter().map(|t| t.0).collect();
        let result = prefix_cache::save(&disk.config.dir, &disk.key, &ids, |path| {
            self.ctx
                .state_seq_save_file(path, 0, tokens)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        match result {
            Ok(true) => {
                let id = prefix_cache::entry_id(&disk.key, &ids);
                let evicted = prefix_cache::evict(&disk.config.dir, disk.config.max_bytes, &id);
                tracing::debug!(entry = %id, tokens = ids.len(), evicted = evicted.len(), "prompt cache: prefix saved");
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "prompt cache: prefix not saved"),
        }
    }

    fn generate(&mut self, shared: &Shared, job: &Job) -> Result<Generation, LlmError> {
        let tokens = shared.tokenize(&job.prompt);
        let n_ctx = shared.n_ctx as usize;
        if tokens.len() >= n_ctx {
            return Err(local_error(
                ErrorClass::ContextOverflow,
                format!(
                    "the prompt takes {} tokens but the context window is {n_ctx} tokens",
                    tokens.len()
                ),
            ));
        }
        let started = Instant::now();
        let disk = shared.disk.as_ref().filter(|_| job.options.reuse_prefix);
        let ids: Vec<i32> = tokens.iter().map(|t| t.0).collect();
        // The stable part in tokens: the rendered system turn, when it tokenizes to a
        // prefix of the whole prompt (needed only to save prefixes).
        let boundary = disk
            .and(job.options.stable_prefix)
            .and_then(|n| job.prompt.get(..n))
            .map(|head| shared.tokenize(head))
            .filter(|head| head.len() < tokens.len() && tokens.starts_with(head))
            .map(|head| head.len());
        // What the context holds must be what `tokens` says (a decode that failed half way
        // leaves them apart); if not, start over rather than reuse a wrong prefix.
        let pos_max = self.ctx.kv_cache_seq_pos_max(0);
        if pos_max != self.tokens.len() as i32 - 1 {
            tracing::debug!(
                tokens = self.tokens.len(),
                pos_max,
                "local model: KV cache out of step with its tokens; cleared"
            );
            self.reset();
        }
        // Reuse the common prefix, but always decode at least the last prompt token: its
        // logits start the answer.
        let mut common = if job.options.reuse_prefix {
            self.tokens
                .iter()
                .zip(&tokens)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            0
        };
        let mut loaded = false;
        // The folder is read once per generation: for the load and for the save decision.
        let mut entries = disk
            .map(|d| prefix_cache::entries(&d.config.dir, &d.key))
            .unwrap_or_default();
        if let Some(disk) = disk {
            (common, loaded) = self.load_saved(disk, &mut entries, &ids, common);
        }
        // A prompt the context already holds whole (the same question again after `/new`)
        // is prefilled afresh: cutting the context back inside it and decoding its last token
        // again gave degenerate answers in the REPL (the fresh-user pass of stop 32; not
        // reproduced below the REPL), and a prefill of one prompt costs little.
        if common >= tokens.len() && !loaded {
            self.reset();
            common = 0;
        }
        let reused = self.truncate(common.min(tokens.len().saturating_sub(1)));
        let mut save_at = disk
            .and_then(|_| Self::save_point(&entries, &ids, boundary))
            .filter(|p| *p >= reused);
        let stopped = |generated: u64, stop: StopReason, prefill_done: Option<Instant>| {
            let now = Instant::now();
            let prefill_done = prefill_done.unwrap_or(now);
            Generation {
                prompt_tokens: tokens.len() as u64,
                reused_tokens: reused as u64,
                loaded_from_disk: loaded,
                generated_tokens: generated,
                stop,
                prefill_time: prefill_done - started,
                decode_time: now - prefill_done,
            }
        };

        let mut batch = LlamaBatch::new(PREFILL_BATCH, 1);
        let last = tokens.len().saturating_sub(1);
        let mut pos = reused;
        while pos < tokens.len() {
            if let (Some(p), Some(disk)) = (save_at, disk)
                && p == pos
            {
                self.save_prefix(disk, &tokens[..pos]);
                save_at = None;
            }
            if job.cancel.is_cancelled() {
                return Ok(stopped(0, StopReason::Cancelled, None));
            }
            let mut end = (pos + PREFILL_BATCH).min(tokens.len());
            if let Some(p) = save_at.filter(|p| *p > pos) {
                end = end.min(p);
            }
            let chunk = &tokens[pos..end];
            batch.clear();
            for (i, token) in chunk.iter().enumerate() {
                let p = pos + i;
                batch
                    .add(*token, p as i32, &[0], p == last)
                    .map_err(batch_err)?;
            }
            self.ctx.decode(&mut batch).map_err(decode_err)?;
            self.tokens.extend_from_slice(chunk);
            pos = end;
        }
        let prefill_done = Some(Instant::now());

        let mut sampler = sampler_for(&job.options);
        let vocab = shared.model.vocab();
        let mut utf8 = Utf8Stream::default();
        let mut piece = Vec::new();
        let mut generated: u64 = 0;
        let budget = u64::from(job.options.max_tokens.max(1));
        let stop = loop {
            if job.cancel.is_cancelled() {
                break StopReason::Cancelled;
            }
            if job.abort.load(Ordering::Relaxed) {
                break StopReason::Aborted;
            }
            let token = sampler.sample(&self.ctx, batch.n_tokens() - 1);
            generated += 1;
            if vocab.is_eog(token) {
                break StopReason::EndOfTurn;
            }
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, false, None);
            let text = utf8.push(&piece);
            if !text.is_empty() && job.events.send(WorkerEvent::Piece(text)).is_err() {
                break StopReason::Aborted;
            }
            if generated >= budget || pos >= n_ctx {
                break StopReason::Length;
            }
            batch.clear();
            batch
                .add(token, pos as i32, &[0], true)
                .map_err(batch_err)?;
            self.ctx.decode(&mut batch).map_err(decode_err)?;
            self.tokens.push(token);
            pos += 1;
        };
        let tail = utf8.finish();
        if !tail.is_empty() && stop != StopReason::Cancelled {
            let _ = job.events.send(WorkerEvent::Piece(tail));
        }
        Ok(stopped(generated, stop, prefill_done))
    }
}

/// Greedy when no positive temperature is asked for; otherwise a top-k/top-p/min-p chain.
fn sampler_for(options: &GenerateOptions) -> LlamaSampler {
    match options.temperature {
        Some(t) if t > 0.0 => LlamaSampler::chain_simple([
            LlamaSampler::top_k(40),
            LlamaSampler::top_p(0.95, 1),
            LlamaSampler::min_p(0.05, 1),
            LlamaSampler::temp(t),
            LlamaSampler::dist(options.seed),
        ]),
        _ => LlamaSampler::greedy(),
    }
}
