//! The llama.cpp engine facade: one process-wide backend, [`LocalModel`] (a loaded GGUF with
//! its own inference thread, see `worker.rs`) and its configuration (FEATURES §14).
//! [`LocalModel::generate`] blocks the calling thread; the async client calls it on a
//! blocking thread (ARCHITECTURE §6).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaChatMessage;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use tokio_util::sync::CancellationToken;

use super::prefix_cache::{CacheKey, ENGINE_VERSION, PromptCacheConfig, model_digest};
use super::prompt::{ChatTurn, render_chatml};
use super::worker::{self, DiskCache, Job, Shared, WorkerEvent};
use crate::error::{ErrorClass, LlmError};

/// Default context window in tokens (capped by the model's training context). 8,192 so the
/// full built-in tool list plus the compact prompt fits with room for a few turns (4,096 did
/// not once `todo` and `clarify` joined the default toolset).
pub const DEFAULT_N_CTX: u32 = 8192;
/// Default output cap in tokens when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 512;

/// How to load and run a local GGUF model.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalConfig {
    /// Path of the `.gguf` file.
    pub model_path: PathBuf,
    /// Context window in tokens; `None` = [`DEFAULT_N_CTX`]. Always capped by the
    /// model's `n_ctx_train`.
    pub n_ctx: Option<u32>,
    /// CPU threads for prompt processing and generation; `None` = [`default_threads`] (all
    /// cores but one) for generation and [`default_prefill_threads`] (all cores) for the
    /// prompt.
    pub threads: Option<usize>,
    /// Output cap when a request sets no `max_tokens`; `None` = [`DEFAULT_MAX_TOKENS`].
    pub default_max_tokens: Option<u32>,
    /// Seed for sampling when a request asks for a temperature above zero.
    pub seed: u32,
    /// Element type of the KV cache (`local.kv_cache_type`).
    pub kv_cache_type: KvCacheKind,
    /// The persistent prompt-prefix cache (`HERMES_HOME/cache/prompt/`); `None` or a zero
    /// budget keeps prefixes in memory only.
    pub prompt_cache: Option<PromptCacheConfig>,
}

/// The default thread count: every available core but one, at least one. llama.cpp's
/// threads wait for each other at every step by spinning, so when one of them is
/// descheduled (a browser, a compile on the same cores) all of them wait: on 2 cores under
/// load a warm `chat -q` took 12–26 s with 2 threads and under 2 s with 1 (the fresh-user
/// pass of stop 32, `perf`: 82 % of the time in `ggml_barrier`). `local.threads` overrides.
pub fn default_threads() -> usize {
    cores().saturating_sub(1).max(1)
}

/// The default thread count for prompt processing (prefill): every available core. A
/// prefill is one large matrix product per layer, where OpenMP's threads share the work
/// evenly and a descheduled thread costs little; on 2 idle cores it runs at 304 tok/s with
/// 2 threads and 162 tok/s with 1, and with the other core busy 136 vs 161 tok/s
/// (bench/local_model.sh, 2026-12-03 13:55 UTC). Generation keeps [`default_threads`]: one
/// token at a time is a barrier per layer, and there a busy core made 2 threads run at
/// 11 tok/s against 55 with 1 (94 vs 56 when idle).
pub fn default_prefill_threads() -> usize {
    cores()
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Element type of the KV cache. `f16` is llama.cpp's default; `q8_0` halves the cache's
/// memory and saved-prefix files (issue 19 item 3; `bench/run` measures both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvCacheKind {
    /// 16-bit floats.
    #[default]
    F16,
    /// 8-bit blocks (llama.cpp `q8_0`).
    Q8_0,
}

impl KvCacheKind {
    /// Parses a `local.kv_cache_type` value (`f16`, `q8_0`; any case).
    ///
    /// Errors: any other value, with the accepted ones.
    pub fn parse(value: &str) -> Result<KvCacheKind, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "f16" => Ok(KvCacheKind::F16),
            "q8_0" => Ok(KvCacheKind::Q8_0),
            other => Err(format!("unknown KV cache type `{other}` (use f16 or q8_0)")),
        }
    }

    /// The config spelling (`f16`, `q8_0`).
    pub fn as_str(self) -> &'static str {
        match self {
            KvCacheKind::F16 => "f16",
            KvCacheKind::Q8_0 => "q8_0",
        }
    }

    fn llama(self) -> llama_cpp_2::context::params::KvCacheType {
        match self {
            KvCacheKind::F16 => llama_cpp_2::context::params::KvCacheType::F16,
            KvCacheKind::Q8_0 => llama_cpp_2::context::params::KvCacheType::Q8_0,
        }
    }
}

impl LocalConfig {
    /// A configuration with every default for the model at `model_path`.
    pub fn new(model_path: impl Into<PathBuf>) -> LocalConfig {
        LocalConfig {
            model_path: model_path.into(),
            n_ctx: None,
            threads: None,
            default_max_tokens: None,
            seed: 0x5eed,
            kv_cache_type: KvCacheKind::F16,
            prompt_cache: None,
        }
    }
}

/// Knobs of one generation.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Stop after this many generated tokens (finish reason `Length`).
    pub max_tokens: u32,
    /// `None` or ≤ 0 = greedy decoding; otherwise temperature sampling with top-k 40,
    /// top-p 0.95, min-p 0.05.
    pub temperature: Option<f32>,
    /// Seed for the sampling distribution.
    pub seed: u32,
    /// Reuse the KV cache of the previous generation for the longest common token prefix
    /// (the normal case; the benchmark turns it off to time full prefills). Also gates the
    /// persistent prefix cache.
    pub reuse_prefix: bool,
    /// Byte length of the prompt's leading part that is stable across sessions (the
    /// rendered system turn: identity, tools, memory, skills index, date); the persistent
    /// cache saves the KV state of that part. `None` = unknown, nothing is saved.
    pub stable_prefix: Option<usize>,
}

/// Why a generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model produced an end-of-generation token (EOS / end of turn).
    EndOfTurn,
    /// `max_tokens` reached or the context window is full.
    Length,
    /// The cancellation token fired.
    Cancelled,
    /// The piece callback asked to stop (e.g. the receiver went away).
    Aborted,
}

/// Counts and timings of one finished generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Prompt tokens in total (reused ones included).
    pub prompt_tokens: u64,
    /// Prompt tokens served from the KV cache (the previous generation's or a saved prefix
    /// loaded from the persistent cache), not prefilled.
    pub reused_tokens: u64,
    /// Whether a saved prefix was loaded from the persistent cache for this generation.
    pub loaded_from_disk: bool,
    /// Tokens generated (including the end-of-turn token when one stopped it).
    pub generated_tokens: u64,
    /// Why it stopped.
    pub stop: StopReason,
    /// Wall time of the prompt prefill (the non-reused tokens).
    pub prefill_time: Duration,
    /// Wall time of the token-by-token decode.
    pub decode_time: Duration,
}

/// The process-wide llama.cpp backend (it may be initialised only once per process).
pub(crate) fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    let result = BACKEND.get_or_init(|| {
        llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
        LlamaBackend::init().map_err(|e| e.to_string())
    });
    result
        .as_ref()
        .map_err(|e| local_error(ErrorClass::Unknown, format!("llama.cpp backend: {e}")))
}

/// Builds an [`LlmError`] for the local provider (no HTTP status).
pub(crate) fn local_error(class: ErrorClass, message: impl Into<String>) -> LlmError {
    LlmError {
        class,
        status: None,
        message: format!("local model: {}", message.into()),
        retry_after: None,
    }
}

/// A GGUF chat model loaded once and shared by every call. Generations run one at a time
/// on the model's own inference thread, which keeps the llama.cpp context (and so the KV
/// cache of the previous call's prompt prefix) alive between calls.
pub struct LocalModel {
    shared: Arc<Shared>,
    name: String,
    default_max_tokens: u32,
    seed: u32,
    jobs: Mutex<Sender<Job>>,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.name)
            .field("n_ctx", &self.shared.n_ctx)
            .field("threads", &self.shared.threads)
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Loads the GGUF at `config.model_path` (memory-mapped, CPU only).
    ///
    /// Errors: a missing or unreadable file is [`ErrorClass::ModelNotFound`]; a file
    /// llama.cpp cannot load is [`ErrorClass::FormatError`].
    pub fn load(config: &LocalConfig) -> Result<LocalModel, LlmError> {
        let path = &config.model_path;
        if !path.is_file() {
            return Err(local_error(
                ErrorClass::ModelNotFound,
                format!(
                    "no GGUF file at {} (run `hermes model pull` or configure a path)",
                    path.display()
                ),
            ));
        }
        check_cpu_features()?;
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| {
                local_error(
                    ErrorClass::FormatError,
                    format!("cannot load {}: {e}", path.display()),
                )
            })?;
        let train = model.n_ctx_train().max(1);
        let n_ctx = config.n_ctx.unwrap_or(DEFAULT_N_CTX).clamp(1, train);
        let threads = config.threads.unwrap_or_else(default_threads).clamp(1, 256);
        let prefill_threads = config
            .threads
            .unwrap_or_else(default_prefill_threads)
            .clamp(1, 256);
        let template = model.chat_template(None).ok();
        let disk = config
            .prompt_cache
            .as_ref()
            .filter(|c| c.max_bytes > 0)
            .and_then(|c| match model_digest(&c.dir, path) {
                Ok((model_size, model_sha256)) => Some(DiskCache {
                    config: c.clone(),
                    key: CacheKey {
                        model_size,
                        model_sha256,
                        n_ctx,
                        kv_type: config.kv_cache_type.as_str().to_string(),
                        engine: ENGINE_VERSION.to_string(),
                    },
                }),
                Err(e) => {
                    tracing::warn!(error = %e, "prompt cache off: cannot hash the model file");
                    None
                }
            });
        let shared = Arc::new(Shared {
            model,
            n_ctx,
            threads: i32::try_from(threads).unwrap_or(1),
            prefill_threads: i32::try_from(prefill_threads).unwrap_or(1),
            template,
            kv_type: config.kv_cache_type.llama(),
            disk,
        });
        let (jobs, inbox) = mpsc::channel::<Job>();
        let for_worker = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("hermes-local-llm".to_string())
            .spawn(move || worker::run(for_worker, inbox))
            .map_err(|e| local_error(ErrorClass::Unknown, format!("inference thread: {e}")))?;
        Ok(LocalModel {
            shared,
            name: model_name(path),
            default_max_tokens: config.default_max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            seed: config.seed,
            jobs: Mutex::new(jobs),
        })
    }

    /// Model name: the file stem of the GGUF path.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Context window in tokens used for every generation.
    pub fn n_ctx(&self) -> u32 {
        self.shared.n_ctx
    }

    /// Output cap used when a request sets none.
    pub fn default_max_tokens(&self) -> u32 {
        self.default_max_tokens
    }

    /// Seed configured for sampling.
    pub fn seed(&self) -> u32 {
        self.seed
    }

    /// True when the GGUF carries its own chat template (otherwise ChatML is used).
    pub fn has_chat_template(&self) -> bool {
        self.shared.template.is_some()
    }

    /// Renders turns with the model's own chat template, ending with an open assistant
    /// turn; falls back to ChatML when the GGUF has no template or llama.cpp does not
    /// recognise it.
    pub fn render(&self, turns: &[ChatTurn]) -> String {
        self.render_with(turns, true)
    }

    /// [`Self::render`], with or without the open assistant turn at the end.
    pub fn render_with(&self, turns: &[ChatTurn], add_assistant: bool) -> String {
        if let Some(template) = &self.shared.template {
            let messages: Result<Vec<LlamaChatMessage>, _> = turns
                .iter()
                .map(|t| LlamaChatMessage::new(t.role.clone(), t.content.clone()))
                .collect();
            if let Ok(messages) = messages
                && let Ok(text) =
                    self.shared
                        .model
                        .apply_chat_template(template, &messages, add_assistant)
            {
                return text;
            }
            tracing::debug!("chat template not usable by llama.cpp; using ChatML");
        }
        render_chatml(turns, add_assistant)
    }

    /// Number of tokens `text` takes (special tokens such as `<|im_start|>` parsed).
    pub fn count_tokens(&self, text: &str) -> usize {
        self.shared.tokenize(text).len()
    }

    /// Runs one generation for a rendered `prompt` on the model's inference thread,
    /// calling `on_piece` (on this thread) with each chunk of decoded text (complete UTF-8
    /// only); `on_piece` returns `false` to stop. `cancel` is checked between prefill
    /// batches and between tokens. Blocks until the generation ends; concurrent callers
    /// wait their turn.
    ///
    /// Errors: a prompt that leaves no room in the context window is
    /// [`ErrorClass::ContextOverflow`]; llama.cpp failures are [`ErrorClass::Unknown`].
    pub fn generate(
        &self,
        prompt: &str,
        options: &GenerateOptions,
        cancel: &CancellationToken,
        mut on_piece: impl FnMut(&str) -> bool,
    ) -> Result<Generation, LlmError> {
        let gone = || local_error(ErrorClass::Unknown, "the inference thread stopped");
        let (events, inbox) = mpsc::channel();
        let abort = Arc::new(AtomicBool::new(false));
        let job = Job {
            prompt: prompt.to_string(),
            options: options.clone(),
            cancel: cancel.clone(),
            abort: Arc::clone(&abort),
            events,
        };
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(job)
            .map_err(|_| gone())?;
        loop {
            match inbox.recv().map_err(|_| gone())? {
                WorkerEvent::Piece(text) => {
                    if !abort.load(std::sync::atomic::Ordering::Relaxed) && !on_piece(&text) {
                        abort.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                WorkerEvent::Done(result) => return result,
            }
        }
    }
}

/// Refuses to run llama.cpp kernels the CPU cannot execute. `.cargo/config.toml` builds
/// ggml with the x86-64-v3 vector extensions (`GGML_AVX2=ON` etc., also visible to this
/// crate at compile time); on an older CPU they would die with SIGILL, so say why instead.
///
/// Errors: [`ErrorClass::FormatError`] naming the missing extensions.
fn check_cpu_features() -> Result<(), LlmError> {
    #[cfg(target_arch = "x86_64")]
    {
        let wanted: [(&str, Option<&str>, bool); 4] = [
            (
                "avx2",
                option_env!("GGML_AVX2"),
                std::arch::is_x86_feature_detected!("avx2"),
            ),
            (
                "fma",
                option_env!("GGML_FMA"),
                std::arch::is_x86_feature_detected!("fma"),
            ),
            (
                "f16c",
                option_env!("GGML_F16C"),
                std::arch::is_x86_feature_detected!("f16c"),
            ),
            (
                "bmi2",
                option_env!("GGML_BMI2"),
                std::arch::is_x86_feature_detected!("bmi2"),
            ),
        ];
        let missing: Vec<&str> = wanted
            .iter()
            .filter(|(_, built, present)| *built == Some("ON") && !present)
            .map(|(name, _, _)| *name)
            .collect();
        if !missing.is_empty() {
            return Err(local_error(
                ErrorClass::FormatError,
                format!(
                    "this build of the local engine needs CPU extensions this machine lacks ({}); \
                     rebuild without the GGML_* settings in .cargo/config.toml",
                    missing.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The display name of a model file: its file stem.
pub fn model_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "local".to_string())
}

/// Joins token bytes into UTF-8 text, holding back an incomplete trailing character
/// (a multi-byte character may be split across tokens) and replacing invalid bytes.
#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    held: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes; returns the text that is complete so far.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.held.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.held) {
                Ok(s) => {
                    out.push_str(s);
                    self.held.clear();
                    return out;
                }
                Err(e) => {
                    let good = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.held[..good]));
                    match e.error_len() {
                        None => {
                            self.held.drain(..good);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.held.drain(..good + bad);
                        }
                    }
                }
            }
        }
    }

    /// Flushes what is left (an incomplete character becomes U+FFFD).
    pub(crate) fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.held).into_owned();
        self.held.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stream_holds_split_characters() {
        let mut s = Utf8Stream::default();
        let bytes = "é€".as_bytes();
        assert_eq!(s.push(&bytes[..1]), "");
        assert_eq!(s.push(&bytes[1..3]), "é");
        assert_eq!(s.push(&bytes[3..]), "€");
        assert_eq!(s.push(&[0xff, b'a']), "\u{FFFD}a");
        assert_eq!(s.push(&[0xe2]), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }

    #[test]
    fn model_name_is_file_stem() {
        assert_eq!(
            model_name(Path::new("/x/SmolLM2-135M-Instruct.Q4_1.gguf")),
            "SmolLM2-135M-Instruct.Q4_1"
        );
    }
}
