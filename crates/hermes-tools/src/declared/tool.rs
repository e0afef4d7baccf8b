//! [`DeclaredTool`]: one declarative HTTP tool as a [`Tool`] (seed 004 §3; issue 26 item 4).
//!
//! A call fills the endpoint's URL template from the arguments (top-level `default`s of
//! `input_schema` filled in first), sends the arguments the URL does not use as query
//! parameters (`GET`, `DELETE`) or as a JSON body (`POST`, `PUT`, `PATCH`), with the file's
//! headers, under the web tools' address policy ([`crate::web::ssrf`]: literal IPs checked,
//! host names resolved through the guarded resolver, no proxies, no redirects followed),
//! within `timeout_ms`, reading at most [`MAX_RESPONSE_BYTES`].
//!
//! - A 2xx answer is the result, marked as outside data (`prompts/declared_result.md`); with
//!   an `output_schema` it must be JSON matching it, or the call is an error result naming
//!   the mismatched fields (nothing of the answer passed on).
//! - No connection, a timeout, or a 5xx / 429 answer: the endpoint is down — the tool is
//!   marked unhealthy ([`super::monitor`]) and the call answered by the fallback
//!   (`fallback_text`, or the same request to `fallback_endpoint`), or fails when there is
//!   none. While unhealthy, calls go straight to the fallback.
//! - Another status (4xx) is an error result with the status and the start of the body.
//!
//! Header values and every `${NAME}` value the file uses are secrets of this tool: they are
//! masked in every result and error it returns (their own [`SecretRedactor`], on top of the
//! agent's), never logged, and sent to the health and fallback endpoints only when those
//! have the endpoint's origin.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hermes_protocol::{SecretRedactor, ToolSpec};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::monitor::{HealthMonitor, Probe};
use super::spec::{DeclaredSpec, Fallback};
use super::template::Template;
use crate::health::ToolHealth;
use crate::tool::{Parallelism, Tool, ToolContext, ToolOutput};
use crate::validate::SchemaValidator;
use crate::web::ssrf::{GuardedResolver, check_url, find_refusal};

/// Most bytes of an answer that are read; a longer answer is an error result (1 MiB).
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
/// Most chars of an error answer's body quoted in the error result.
const ERROR_BODY_CHARS: usize = 300;
/// The base toolset of every declarative tool (in the `hermes-cli` default).
pub const DECLARATIVE_TOOLSET: &str = "declarative";

const RESULT_HEADER: &str = include_str!("../../prompts/declared_result.md");
const FALLBACK_HEADER: &str = include_str!("../../prompts/declared_fallback.md");
const UNAVAILABLE: &str = include_str!("../../prompts/declared_unavailable.md");

/// The file's `${NAME}`s and headers, resolved from the environment.
struct Resolved {
    url: Template,
    headers: HeaderMap,
    fallback_url: Option<(Template, HeaderMap)>,
}

/// One declarative HTTP tool, loaded from `HERMES_HOME/tools/<name>.yaml`.
pub struct DeclaredTool {
    spec: DeclaredSpec,
    tool_spec: ToolSpec,
    file: PathBuf,
    allow_private: bool,
    client: Result<reqwest::Client, String>,
    resolved: Result<Resolved, String>,
    redactor: SecretRedactor,
    output: Option<SchemaValidator>,
    monitor: Arc<HealthMonitor>,
}

impl std::fmt::Debug for DeclaredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeclaredTool")
            .field("name", &self.spec.name)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// Why a request did not give a usable answer.
enum Failure {
    /// The endpoint is down (no connection, timeout, 5xx, 429): health failure, fallback.
    Down(String),
    /// Anything else (bad argument, 4xx, an answer breaking the output schema): an error
    /// result, the endpoint stays healthy.
    Refused(String),
}

/// A 2xx answer.
struct Answer {
    host: String,
    body: String,
}

/// The origin (`scheme://host:port`) of a template's URL, from its text up to the first
/// `{arg}` — `None` when it does not parse.
fn origin_of(t: &Template) -> Option<url::Origin> {
    reqwest::Url::parse(&t.sample(&BTreeMap::new(), "x"))
        .ok()
        .map(|u| u.origin())
}

/// A one-line reason for a failed request, without its URL (which may hold a secret).
pub(crate) fn transport_reason(err: &reqwest::Error) -> String {
    if let Some(refused) = find_refusal(err) {
        return refused.to_string();
    }
    if err.is_timeout() {
        return "timed out".to_string();
    }
    let mut innermost: &(dyn std::error::Error + 'static) = err;
    while let Some(next) = innermost.source() {
        innermost = next;
    }
    if err.is_connect() {
        format!("could not connect: {innermost}")
    } else {
        format!("request failed: {innermost}")
    }
}

impl DeclaredTool {
    /// Builds the tool of a checked file `file`: `${NAME}`s resolved from `env`
    /// (`HERMES_HOME/.env` over the process environment, as hermes reads every secret), the
    /// HTTP client set up with `timeout_ms` and the address policy (`allow_private` =
    /// `web.allow_private_urls`). A variable that is not set makes the tool unavailable
    /// ([`Tool::available`] says which).
    pub fn new(
        spec: DeclaredSpec,
        file: &Path,
        env: &BTreeMap<String, String>,
        allow_private: bool,
    ) -> DeclaredTool {
        crate::web::init_tls();
        let mut builder = reqwest::Client::builder()
            .timeout(spec.timeout)
            .connect_timeout(spec.timeout.min(Duration::from_secs(10)))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        if !allow_private {
            builder = builder.dns_resolver(GuardedResolver);
        }
        let client = builder
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"));
        let label = format!(
            "tools/{}",
            file.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        let mut secrets: Vec<(String, String)> = Vec::new();
        let mut names: Vec<&str> = spec.url.env_names();
        for (_, t) in &spec.headers {
            names.extend(t.env_names());
        }
        if let Some(t) = &spec.health_endpoint {
            names.extend(t.env_names());
        }
        if let Fallback::Endpoint(t) = &spec.fallback {
            names.extend(t.env_names());
        }
        for name in names {
            if let Some(v) = env.get(name) {
                secrets.push((format!("{label}.env.{name}"), v.clone()));
            }
        }
        let resolved = resolve(&spec, env, &label, &mut secrets);
        let redactor = SecretRedactor::new(secrets);
        let probe = match (&resolved, &spec.health_endpoint, &client) {
            (Ok(r), Some(t), Ok(client)) => t
                .with_env(env)
                .ok()
                .and_then(|t| t.fill(&Value::Null).ok())
                .and_then(|u| reqwest::Url::parse(&u).ok())
                .map(|url| Probe {
                    headers: if Some(url.origin()) == origin_of(&r.url) {
                        r.headers.clone()
                    } else {
                        HeaderMap::new()
                    },
                    url,
                    client: client.clone(),
                }),
            _ => None,
        };
        let monitor = Arc::new(HealthMonitor::new(
            probe,
            spec.health_interval,
            spec.fallback != Fallback::None,
        ));
        let output = spec
            .output_schema
            .as_ref()
            .and_then(|s| SchemaValidator::compile(s).ok());
        DeclaredTool {
            tool_spec: ToolSpec {
                name: spec.name.clone(),
                description: spec.description.trim().to_string(),
                parameters: spec.input_schema.clone(),
            },
            spec,
            file: file.to_path_buf(),
            allow_private,
            client,
            resolved,
            redactor,
            output,
            monitor,
        }
    }

    /// The file it was loaded from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The checked declaration.
    pub fn declaration(&self) -> &DeclaredSpec {
        &self.spec
    }

    async fn run(&self, args: Value) -> ToolOutput {
        let (resolved, client) = match (&self.resolved, &self.client) {
            (Ok(r), Ok(c)) => (r, c),
            (Err(e), _) | (_, Err(e)) => {
                return ToolOutput::error(format!("`{}` cannot run: {e}", self.spec.name));
            }
        };
        let args = with_defaults(&self.spec.input_schema, args);
        if let ToolHealth::Unhealthy { reason, .. } = self.monitor.status() {
            return self.fallback(resolved, client, &args, &reason).await;
        }
        match self
            .send(client, &resolved.url, &resolved.headers, &args)
            .await
        {
            Ok(answer) => {
                self.monitor.record_success();
                ToolOutput::ok(self.present(&answer))
            }
            Err(Failure::Refused(message)) => ToolOutput::error(message),
            Err(Failure::Down(reason)) => {
                let reason = self.redactor.redact_string(reason);
                tracing::warn!(tool = %self.spec.name, %reason, "declarative tool endpoint is down");
                self.monitor.record_failure(&reason);
                self.fallback(resolved, client, &args, &reason).await
            }
        }
    }

    fn present(&self, answer: &Answer) -> String {
        format!(
            "{}\n{}",
            RESULT_HEADER
                .trim()
                .replace("{tool}", &self.spec.name)
                .replace("{host}", &answer.host),
            answer.body
        )
    }

    async fn fallback(
        &self,
        resolved: &Resolved,
        client: &reqwest::Client,
        args: &Value,
        reason: &str,
    ) -> ToolOutput {
        let header = FALLBACK_HEADER
            .trim()
            .replace("{tool}", &self.spec.name)
            .replace("{reason}", reason);
        match (&self.spec.fallback, &resolved.fallback_url) {
            (Fallback::Text(text), _) => ToolOutput::ok(format!("{header}\n{}", text.trim_end())),
            (Fallback::Endpoint(_), Some((url, headers))) => {
                match self.send(client, url, headers, args).await {
                    Ok(answer) => ToolOutput::ok(format!("{header}\n{}", self.present(&answer))),
                    Err(Failure::Down(m) | Failure::Refused(m)) => ToolOutput::error(format!(
                        "`{}` is unhealthy ({reason}) and its fallback endpoint failed too: {}",
                        self.spec.name,
                        self.redactor.redact_string(m)
                    )),
                }
            }
            _ => ToolOutput::error(
                UNAVAILABLE
                    .trim()
                    .replace("{tool}", &self.spec.name)
                    .replace("{reason}", reason),
            ),
        }
    }

    /// One request to `url` filled from `args`.
    async fn send(
        &self,
        client: &reqwest::Client,
        url: &Template,
        headers: &HeaderMap,
        args: &Value,
    ) -> Result<Answer, Failure> {
        let name = &self.spec.name;
        let text = url.fill(args).map_err(Failure::Refused)?;
        let mut target = reqwest::Url::parse(&text).map_err(|e| {
            Failure::Refused(format!("`{name}`: the filled URL is not valid ({e})"))
        })?;
        check_url(&target, self.allow_private).map_err(Failure::Refused)?;
        let used: Vec<&str> = url.args();
        let rest: Map<String, Value> = args
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !used.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let method = self.spec.method.clone();
        let in_query = method == reqwest::Method::GET || method == reqwest::Method::DELETE;
        if in_query && !rest.is_empty() {
            let mut pairs = target.query_pairs_mut();
            for (k, v) in &rest {
                match v {
                    Value::Null => {}
                    Value::String(s) => {
                        pairs.append_pair(k, s);
                    }
                    Value::Array(items) => {
                        for item in items {
                            match item {
                                Value::String(s) => pairs.append_pair(k, s),
                                other => pairs.append_pair(k, &other.to_string()),
                            };
                        }
                    }
                    other => {
                        pairs.append_pair(k, &other.to_string());
                    }
                }
            }
        }
        let host = target.host_str().unwrap_or_default().to_string();
        let mut request = client
            .request(method.clone(), target)
            .headers(headers.clone());
        if !in_query {
            request = request.json(&Value::Object(rest));
        }
        let mut resp = request
            .send()
            .await
            .map_err(|e| Failure::Down(transport_reason(&e)))?;
        let status = resp.status();
        tracing::debug!(tool = %name, %method, %host, status = status.as_u16(), "declarative tool call");
        let mut body: Vec<u8> = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                        if status.is_success() {
                            return Err(Failure::Refused(format!(
                                "the answer of `{name}` is larger than {} KiB; it is not passed on",
                                MAX_RESPONSE_BYTES / 1024
                            )));
                        }
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Err(Failure::Down(transport_reason(&e))),
            }
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        let code = status.as_u16();
        if status.is_server_error() || code == 429 {
            return Err(Failure::Down(format!("HTTP {code}")));
        }
        if !status.is_success() {
            let start: String = body.trim().chars().take(ERROR_BODY_CHARS).collect();
            return Err(Failure::Refused(self.redactor.redact_string(format!(
                "`{name}` answered HTTP {code}{}{start}",
                if start.is_empty() { "" } else { ": " }
            ))));
        }
        if let Some(validator) = &self.output {
            let value: Value = serde_json::from_str(&body).map_err(|e| {
                Failure::Refused(format!(
                    "the answer of `{name}` is not JSON ({e}), but its output_schema needs JSON; it is not passed on"
                ))
            })?;
            let problems = validator.problems(&value);
            if !problems.is_empty() {
                let lines: Vec<String> = problems.iter().map(|p| format!("- {p}")).collect();
                return Err(Failure::Refused(self.redactor.redact_string(format!(
                    "the answer of `{name}` does not match its output_schema, so it is not passed on:\n{}",
                    lines.join("\n")
                ))));
            }
        }
        Ok(Answer {
            host,
            body: self.redactor.redact_string(body.trim_end().to_string()),
        })
    }
}

/// Resolves the `${NAME}`s of the URLs and headers and collects the header secrets.
fn resolve(
    spec: &DeclaredSpec,
    env: &BTreeMap<String, String>,
    label: &str,
    secrets: &mut Vec<(String, String)>,
) -> Result<Resolved, String> {
    let url = spec.url.with_env(env)?;
    let mut headers = HeaderMap::new();
    for (name, template) in &spec.headers {
        let value = template.with_env(env)?.sample(env, "");
        // A plain header (`Accept: application/json`) is not a secret; one built from a
        // `${NAME}` or named like one (`Authorization`, `X-Api-Key`) is.
        if !template.env_names().is_empty() || hermes_protocol::secrets::is_secret_name(name) {
            secrets.push((format!("{label}.endpoint.headers.{name}"), value.clone()));
        }
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a valid header name"))?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            format!("the value of header `{name}` is not valid in a header (a line break?)")
        })?;
        value.set_sensitive(true);
        headers.append(header, value);
    }
    let fallback_url = match &spec.fallback {
        Fallback::Endpoint(t) => {
            let t = t.with_env(env)?;
            let same = origin_of(&t).is_some() && origin_of(&t) == origin_of(&url);
            Some((
                t,
                if same {
                    headers.clone()
                } else {
                    HeaderMap::new()
                },
            ))
        }
        _ => None,
    };
    Ok(Resolved {
        url,
        headers,
        fallback_url,
    })
}

/// `args` with the `default` of every top-level property of `schema` that is missing.
fn with_defaults(schema: &Value, args: Value) -> Value {
    let Value::Object(mut map) = args else {
        return args;
    };
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if let Some(default) = prop.get("default")
                && !map.contains_key(name)
            {
                map.insert(name.clone(), default.clone());
            }
        }
    }
    Value::Object(map)
}

#[async_trait::async_trait]
impl Tool for DeclaredTool {
    fn spec(&self) -> ToolSpec {
        self.tool_spec.clone()
    }

    fn toolset(&self) -> &'static str {
        DECLARATIVE_TOOLSET
    }

    /// `GET` tools read only and run beside anything; others one at a time.
    fn parallelism(&self) -> Parallelism {
        if self.spec.method == reqwest::Method::GET {
            Parallelism::Safe
        } else {
            Parallelism::Never
        }
    }

    fn available(&self) -> Result<(), String> {
        match (&self.resolved, &self.client) {
            (Ok(_), Ok(_)) => Ok(()),
            (Err(e), _) | (_, Err(e)) => Err(e.clone()),
        }
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let out = self.run(args).await;
        ToolOutput {
            content: self.redactor.redact_string(out.content),
            is_error: out.is_error,
        }
    }

    fn health(&self) -> ToolHealth {
        self.monitor.ensure_background();
        self.monitor.status()
    }

    async fn check_health(&self) -> ToolHealth {
        self.monitor.check_now().await
    }
}
