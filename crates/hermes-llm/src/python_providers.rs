//! The API-key providers Python Hermes 0.19.0 knows beyond hermes' own table, with the base
//! URLs, key variables (in priority order), base-URL override variables and wire protocols
//! of its registry (`PROVIDER_REGISTRY` in `hermes_cli/auth.py`, api_mode from
//! `hermes_cli/providers.py` `determine_api_mode`; aliases from `resolve_provider`), and the
//! providers hermes cannot serve, with what to use instead. The test
//! `tests/python_providers.rs` checks this table against a dump of the real registry.

use crate::runtime::ApiMode;

/// One API-key provider of Python Hermes' registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PythonProvider {
    /// Canonical id (`zai`, `kimi-coding`, …).
    pub id: &'static str,
    /// Other names Python Hermes accepts for it.
    pub aliases: &'static [&'static str],
    /// Inference base URL.
    pub base_url: &'static str,
    /// Variables holding the key, first set wins.
    pub env_vars: &'static [&'static str],
    /// Variable overriding the base URL, if any.
    pub base_url_env: Option<&'static str>,
    /// Wire protocol.
    pub api_mode: ApiMode,
}

const fn p(
    id: &'static str,
    aliases: &'static [&'static str],
    base_url: &'static str,
    env_vars: &'static [&'static str],
    base_url_env: Option<&'static str>,
    api_mode: ApiMode,
) -> PythonProvider {
    PythonProvider {
        id,
        aliases,
        base_url,
        env_vars,
        base_url_env,
        api_mode,
    }
}

use ApiMode::{AnthropicMessages as Anthropic, ChatCompletions as Chat};

/// API-key providers of Python Hermes' registry that speak Chat Completions or Anthropic
/// Messages and are not in hermes' own table.
pub const PYTHON_PROVIDERS: &[PythonProvider] = &[
    p(
        "zai",
        &["glm", "z-ai", "z.ai", "zhipu"],
        "https://api.z.ai/api/paas/v4",
        &["GLM_API_KEY", "ZAI_API_KEY", "Z_AI_API_KEY"],
        Some("GLM_BASE_URL"),
        Chat,
    ),
    p(
        "kimi-coding",
        &["kimi", "kimi-for-coding", "moonshot"],
        "https://api.moonshot.ai/v1",
        &["KIMI_API_KEY", "KIMI_CODING_API_KEY"],
        Some("KIMI_BASE_URL"),
        Chat,
    ),
    p(
        "kimi-coding-cn",
        &["kimi-cn", "moonshot-cn"],
        "https://api.moonshot.cn/v1",
        &["KIMI_CN_API_KEY"],
        None,
        Chat,
    ),
    p(
        "minimax",
        &[],
        "https://api.minimax.io/anthropic",
        &["MINIMAX_API_KEY"],
        Some("MINIMAX_BASE_URL"),
        Anthropic,
    ),
    p(
        "minimax-cn",
        &["minimax-china", "minimax_cn"],
        "https://api.minimaxi.com/anthropic",
        &["MINIMAX_CN_API_KEY"],
        Some("MINIMAX_CN_BASE_URL"),
        Anthropic,
    ),
    p(
        "stepfun",
        &["step", "stepfun-coding-plan"],
        "https://api.stepfun.ai/step_plan/v1",
        &["STEPFUN_API_KEY"],
        Some("STEPFUN_BASE_URL"),
        Chat,
    ),
    p(
        "arcee",
        &["arcee-ai", "arceeai"],
        "https://api.arcee.ai/api/v1",
        &["ARCEEAI_API_KEY"],
        Some("ARCEE_BASE_URL"),
        Chat,
    ),
    p(
        "gmi",
        &["gmi-cloud", "gmicloud"],
        "https://api.gmi-serving.com/v1",
        &["GMI_API_KEY"],
        Some("GMI_BASE_URL"),
        Chat,
    ),
    p(
        "alibaba",
        &[],
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        &["DASHSCOPE_API_KEY"],
        Some("DASHSCOPE_BASE_URL"),
        Chat,
    ),
    p(
        "alibaba-coding-plan",
        &["alibaba_coding", "alibaba-coding", "alibaba_coding_plan"],
        "https://coding-intl.dashscope.aliyuncs.com/v1",
        &["ALIBABA_CODING_PLAN_API_KEY", "DASHSCOPE_API_KEY"],
        Some("ALIBABA_CODING_PLAN_BASE_URL"),
        Chat,
    ),
    p(
        "nvidia",
        &[],
        "https://integrate.api.nvidia.com/v1",
        &["NVIDIA_API_KEY"],
        Some("NVIDIA_BASE_URL"),
        Chat,
    ),
    p(
        "opencode-zen",
        &["opencode", "zen"],
        "https://opencode.ai/zen/v1",
        &["OPENCODE_ZEN_API_KEY"],
        Some("OPENCODE_ZEN_BASE_URL"),
        Chat,
    ),
    p(
        "opencode-go",
        &["go", "opencode-go-sub"],
        "https://opencode.ai/zen/go/v1",
        &["OPENCODE_GO_API_KEY"],
        Some("OPENCODE_GO_BASE_URL"),
        Chat,
    ),
    p(
        "kilocode",
        &["kilo", "kilo-code", "kilo-gateway"],
        "https://api.kilo.ai/api/gateway",
        &["KILOCODE_API_KEY"],
        Some("KILOCODE_BASE_URL"),
        Chat,
    ),
    p(
        "huggingface",
        &["hf", "hugging-face", "huggingface-hub"],
        "https://router.huggingface.co/v1",
        &["HF_TOKEN"],
        Some("HF_BASE_URL"),
        Chat,
    ),
    p(
        "xiaomi",
        &["mimo", "xiaomi-mimo"],
        "https://api.xiaomimimo.com/v1",
        &["XIAOMI_API_KEY"],
        Some("XIAOMI_BASE_URL"),
        Chat,
    ),
    p(
        "tencent-tokenhub",
        &["tencent", "tokenhub", "tencent-cloud", "tencentmaas"],
        "https://tokenhub.tencentmaas.com/v1",
        &["TOKENHUB_API_KEY"],
        Some("TOKENHUB_BASE_URL"),
        Chat,
    ),
    p(
        "ollama-cloud",
        &["ollama_cloud"],
        "https://ollama.com/v1",
        &["OLLAMA_API_KEY"],
        Some("OLLAMA_BASE_URL"),
        Chat,
    ),
    p(
        "deepinfra",
        &["deep-infra", "deepinfra-ai"],
        "https://api.deepinfra.com/v1/openai",
        &["DEEPINFRA_API_KEY"],
        Some("DEEPINFRA_BASE_URL"),
        Chat,
    ),
    p(
        "fireworks",
        &["fireworks-ai", "fw"],
        "https://api.fireworks.ai/inference/v1",
        &["FIREWORKS_API_KEY"],
        None,
        Chat,
    ),
    p(
        "novita",
        &["novita-ai", "novitaai"],
        "https://api.novita.ai/openai/v1",
        &["NOVITA_API_KEY"],
        Some("NOVITA_BASE_URL"),
        Chat,
    ),
    p(
        "upstage",
        &["solar"],
        "https://api.upstage.ai/v1",
        &["UPSTAGE_API_KEY"],
        Some("UPSTAGE_BASE_URL"),
        Chat,
    ),
];

/// Base URL Python Hermes uses for Kimi Code keys (`sk-kimi-…`) of `kimi-coding`, which
/// speak Anthropic Messages there (`_resolve_kimi_base_url`, `host_mandated_api_mode`).
pub const KIMI_CODE_BASE_URL: &str = "https://api.kimi.com/coding";

/// Providers of Python Hermes that hermes cannot serve: `(id and aliases, why, what to use
/// instead)`.
pub const UNSUPPORTED_PROVIDERS: &[(&[&str], &str)] = &[
    (
        &["openai-codex", "codex"],
        "signs in to ChatGPT with OAuth (`hermes auth` in Python Hermes), which hermes does not do; use provider `openai-api` with OPENAI_API_KEY, or `openrouter`",
    ),
    (
        &["bedrock", "aws", "aws-bedrock", "amazon-bedrock", "amazon"],
        "uses AWS credentials and the Bedrock Converse API, which hermes does not speak; use an OpenAI-compatible gateway in front of Bedrock with `provider: custom` and `base_url`, or `openrouter`",
    ),
    (
        &[
            "copilot",
            "github",
            "github-copilot",
            "github-models",
            "github-model",
        ],
        "exchanges a GitHub token for a Copilot session token, which hermes does not do; use `openrouter`, `openai-api` or another API-key provider",
    ),
    (
        &["copilot-acp", "github-copilot-acp", "copilot-acp-agent"],
        "runs GitHub Copilot as an external ACP process, which hermes does not do; use an API-key provider",
    ),
    (
        &["xai-oauth", "x-ai-oauth", "grok-oauth", "xai-grok-oauth"],
        "signs in to xAI with OAuth, which hermes does not do; use provider `xai` with XAI_API_KEY",
    ),
    (
        &["qwen-oauth", "qwen-portal", "qwen-cli"],
        "signs in to Qwen with OAuth, which hermes does not do; use provider `alibaba` with DASHSCOPE_API_KEY",
    ),
    (
        &[
            "minimax-oauth",
            "minimax-portal",
            "minimax-global",
            "minimax_oauth",
        ],
        "signs in to MiniMax with OAuth, which hermes does not do; use provider `minimax` with MINIMAX_API_KEY",
    ),
    (
        &["azure-foundry"],
        "needs your own Azure endpoint; use `provider: custom` with `base_url` set to it and the key in `model.api_key`",
    ),
];

/// The Python provider `name` (id or alias, case-insensitive) names.
pub fn python_provider(name: &str) -> Option<&'static PythonProvider> {
    let n = name.trim().to_ascii_lowercase();
    PYTHON_PROVIDERS
        .iter()
        .find(|p| p.id == n || p.aliases.contains(&n.as_str()))
}

/// Why hermes cannot serve `name` and what to use instead, when it is such a provider.
pub fn unsupported_provider(name: &str) -> Option<&'static str> {
    let n = name.trim().to_ascii_lowercase();
    UNSUPPORTED_PROVIDERS
        .iter()
        .find(|(names, _)| names.contains(&n.as_str()))
        .map(|(_, why)| *why)
}
