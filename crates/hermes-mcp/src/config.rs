//! The `mcp_servers:` section of `config.yaml` (FEATURES §11), typed, with `${VAR}` expansion
//! and the minimal environment of stdio children.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Default time limit of one `tools/call`, in seconds (FEATURES §11).
pub const DEFAULT_CALL_TIMEOUT_S: u64 = 300;
/// Default time limit of connecting and `initialize`, in seconds (FEATURES §11).
pub const DEFAULT_CONNECT_TIMEOUT_S: u64 = 60;

/// Variables a stdio server inherits from hermes' own environment (FEATURES §11: "a minimal
/// environment (PATH, HOME, LANG, …)"); everything else must be listed under `env:`.
pub const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
    "TZ",
];

/// One entry of `mcp_servers:` as written in `config.yaml`.
///
/// Either `command` (stdio) or `url` (Streamable HTTP) must be set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// Executable of a stdio server (looked up on `PATH`).
    pub command: Option<String>,
    /// Arguments of `command`.
    pub args: Vec<String>,
    /// Extra environment of a stdio server; values may use `${VAR}`.
    pub env: BTreeMap<String, String>,
    /// Endpoint of a Streamable HTTP server (`http://host:port/mcp`).
    pub url: Option<String>,
    /// Extra HTTP headers of a Streamable HTTP server; values may use `${VAR}`.
    pub headers: BTreeMap<String, String>,
    /// Time limit of one tool call in seconds (default 300).
    pub timeout: Option<u64>,
    /// Time limit of connect + `initialize` in seconds (default 60).
    pub connect_timeout: Option<u64>,
    /// `false` keeps the entry but does not start the server (default true).
    pub enabled: Option<bool>,
    /// Which of the server's tools are exposed.
    pub tools: ToolFilter,
    /// Tools of this server may run beside each other in one batch (default false: one at a
    /// time).
    pub supports_parallel_tool_calls: bool,
    /// Serving the server's `sampling/createMessage` requests with the session's model:
    /// `false` turns it off, a table sets the caps (default on with the default caps).
    pub sampling: crate::sampling::SamplingConfig,
    /// `oauth` makes a Streamable HTTP server use OAuth 2.1 (tokens from `hermes mcp login`,
    /// kept in `HERMES_HOME/mcp-tokens/<server>.json`); unset means no authorization beyond
    /// `headers`.
    pub auth: Option<String>,
    /// Client settings of `auth: oauth`; all optional.
    pub oauth: OAuthSettings,
    /// Folders offered to this server as MCP roots (`roots/list`); absolute paths, `~/…`
    /// and `${VAR}` allowed. Empty (the default): no roots capability is declared and no
    /// folder is offered — the server keeps the folders its own arguments name (issue 18
    /// §5: nothing implicit, not even the working directory).
    pub roots: Vec<String>,
}

/// `oauth: {client_id, client_secret, scopes, redirect_uri}` of a server with `auth: oauth`.
/// Without `client_id` hermes registers itself dynamically (RFC 7591) when the
/// authorization server allows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OAuthSettings {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret (confidential clients); may use `${VAR}`.
    pub client_secret: Option<String>,
    /// HTTPS URL of a client ID metadata document hermes' user hosts (used as the client id
    /// when the authorization server advertises `client_id_metadata_document_supported`).
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for; empty lets the server's challenge or metadata decide.
    pub scopes: Vec<String>,
    /// Loopback redirect URI for `hermes mcp login` (`http://127.0.0.1:<port>/<path>`);
    /// default: a free port and `/callback`.
    pub redirect_uri: Option<String>,
}

/// `tools: {include, exclude}` of one server: names as the server spells them. An empty
/// `include` means every tool; `exclude` is applied after `include`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolFilter {
    /// Only these tools (empty: all).
    pub include: Vec<String>,
    /// Never these tools.
    pub exclude: Vec<String>,
}

impl ToolFilter {
    /// Whether the server tool `name` passes the filter.
    pub fn allows(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|n| n == name))
            && !self.exclude.iter().any(|n| n == name)
    }
}

/// How to reach a server, after validation and `${VAR}` expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// Executable.
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// The complete environment of the child (inherited minimum + configured).
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        /// Endpoint URL.
        url: String,
        /// Extra headers.
        headers: BTreeMap<String, String>,
        /// OAuth client settings when the entry says `auth: oauth`.
        oauth: Option<OAuthSettings>,
    },
}

/// A server ready to start: name, transport and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// The key under `mcp_servers:`.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Per-call time limit.
    pub call_timeout: Duration,
    /// Connect + initialize time limit.
    pub connect_timeout: Duration,
    /// Which tools are exposed.
    pub tools: ToolFilter,
    /// Tools may run in parallel.
    pub parallel: bool,
    /// Sampling requests are served with these caps; `None` declines them.
    pub sampling: Option<crate::sampling::SamplingCaps>,
    /// Start it at all.
    pub enabled: bool,
    /// Absolute folders offered as roots; empty offers none (see [`McpServerConfig::roots`]).
    pub roots: Vec<std::path::PathBuf>,
}

/// A bad `mcp_servers:` entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The section is not a mapping of names to server tables, or a table has a bad key.
    #[error("config.yaml `mcp_servers`: {0}")]
    Shape(String),
    /// Neither or both of `command` and `url`.
    #[error(
        "config.yaml `mcp_servers.{0}`: set either `command` (stdio server) or `url` (Streamable HTTP server)"
    )]
    Transport(String),
    /// `${VAR}` names a variable that is not set.
    #[error(
        "config.yaml `mcp_servers.{server}`: `${{{var}}}` is not set in the environment or .env"
    )]
    MissingVar {
        /// Server name.
        server: String,
        /// Variable name.
        var: String,
    },
}

/// Parses `mcp_servers:` (the untyped value kept by `hermes_protocol::config::Config`).
/// `None` or YAML null gives no servers. Order is by name.
///
/// # Errors
/// [`ConfigError::Shape`] when the value is not `name: {table}` or a table has unknown keys.
pub fn parse_section(
    value: Option<&yaml_serde::Value>,
) -> Result<BTreeMap<String, McpServerConfig>, ConfigError> {
    match value {
        None | Some(yaml_serde::Value::Null) => Ok(BTreeMap::new()),
        Some(v) => yaml_serde::from_value(v.clone()).map_err(|e| ConfigError::Shape(e.to_string())),
    }
}

/// Replaces every `${NAME}` in `text` with `lookup(NAME)`. `$` not followed by `{` is kept.
///
/// # Errors
/// The name of the first variable `lookup` does not know.
pub fn expand_vars(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        match lookup(name) {
            Some(v) => out.push_str(&v),
            None => return Err(name.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Parses and resolves the whole section: the servers that resolved (in name order,
/// disabled ones included with `enabled: false`) and one message per entry that did not.
/// A section that is not a mapping gives no servers and one message.
pub fn resolve_section(
    value: Option<&yaml_serde::Value>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> (Vec<ServerSpec>, Vec<String>) {
    match parse_section(value) {
        Err(e) => (Vec::new(), vec![e.to_string()]),
        Ok(servers) => {
            let mut specs = Vec::new();
            let mut errors = Vec::new();
            for (name, cfg) in &servers {
                match cfg.resolve(name, lookup) {
                    Ok(s) => specs.push(s),
                    Err(e) => errors.push(e.to_string()),
                }
            }
            (specs, errors)
        }
    }
}

impl McpServerConfig {
    /// Validates the entry `name` and resolves `${VAR}` with `lookup` (the `.env` file, then
    /// the process environment — the caller decides). A stdio child's environment is
    /// [`INHERITED_ENV`] taken from `lookup` plus the configured `env`.
    ///
    /// # Errors
    /// [`ConfigError::Transport`] unless exactly one of `command`/`url` is set;
    /// [`ConfigError::MissingVar`] for an unknown `${VAR}`.
    pub fn resolve(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ServerSpec, ConfigError> {
        let expand = |s: &str| {
            expand_vars(s, lookup).map_err(|var| ConfigError::MissingVar {
                server: name.to_string(),
                var,
            })
        };
        let expand_map =
            |m: &BTreeMap<String, String>| -> Result<BTreeMap<String, String>, ConfigError> {
                m.iter().map(|(k, v)| Ok((k.clone(), expand(v)?))).collect()
            };
        let transport = match (&self.command, &self.url) {
            (Some(command), None) => {
                let mut env: BTreeMap<String, String> = INHERITED_ENV
                    .iter()
                    .filter_map(|k| lookup(k).map(|v| (k.to_string(), v)))
                    .collect();
                env.extend(expand_map(&self.env)?);
                Transport::Stdio {
                    command: expand(command)?,
                    args: self
                        .args
                        .iter()
                        .map(|a| expand(a))
                        .collect::<Result<_, _>>()?,
                    env,
                }
            }
            (None, Some(url)) => Transport::Http {
                url: expand(url)?,
                headers: expand_map(&self.headers)?,
                oauth: match self.auth.as_deref() {
                    None => None,
                    Some("oauth") => {
                        let mut o = self.oauth.clone();
                        if let Some(secret) = &o.client_secret {
                            o.client_secret = Some(expand(secret)?);
                        }
                        if let Some(id) = &o.client_id {
                            o.client_id = Some(expand(id)?);
                        }
                        Some(o)
                    }
                    Some(other) => {
                        return Err(ConfigError::Shape(format!(
                            "`mcp_servers.{name}.auth`: `{other}` is not supported (only `oauth`)"
                        )));
                    }
                },
            },
            _ => return Err(ConfigError::Transport(name.to_string())),
        };
        if self.auth.is_some() && matches!(transport, Transport::Stdio { .. }) {
            return Err(ConfigError::Shape(format!(
                "`mcp_servers.{name}.auth` applies to `url:` servers only"
            )));
        }
        let roots = self
            .roots
            .iter()
            .map(|r| root_path(name, &expand(r)?, lookup))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ServerSpec {
            name: name.to_string(),
            transport,
            call_timeout: Duration::from_secs(self.timeout.unwrap_or(DEFAULT_CALL_TIMEOUT_S)),
            connect_timeout: Duration::from_secs(
                self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT_S),
            ),
            tools: self.tools.clone(),
            parallel: self.supports_parallel_tool_calls,
            sampling: self.sampling.caps(),
            enabled: self.enabled.unwrap_or(true),
            roots,
        })
    }
}

/// One `roots` entry as an absolute path: `~` and `~/…` use `HOME` from `lookup`; `.` and
/// `..` parts are removed lexically (the folder need not exist yet).
///
/// # Errors
/// [`ConfigError::Shape`] naming `mcp_servers.<name>.roots` for a relative path or a `~`
/// without `HOME`.
fn root_path(
    name: &str,
    raw: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<std::path::PathBuf, ConfigError> {
    use std::path::{Component, PathBuf};
    let bad = |why: &str| {
        ConfigError::Shape(format!(
            "`mcp_servers.{name}.roots`: `{raw}` {why} (write an absolute path such as \
             /srv/project or ~/project)"
        ))
    };
    let raw_trimmed = raw.trim();
    let path = if raw_trimmed == "~" || raw_trimmed.starts_with("~/") {
        let home = lookup("HOME").ok_or_else(|| bad("uses `~` but HOME is not set"))?;
        PathBuf::from(home).join(raw_trimmed.trim_start_matches('~').trim_start_matches('/'))
    } else {
        PathBuf::from(raw_trimmed)
    };
    if !path.is_absolute() {
        return Err(bad("is not an absolute path"));
    }
    let mut clean = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other.as_os_str()),
        }
    }
    Ok(clean)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "PATH" => Some("/usr/bin".into()),
            "TOKEN" => Some("s3cret".into()),
            "SECRET_ELSEWHERE" => Some("leak".into()),
            _ => None,
        }
    }

    #[test]
    fn roots_are_absolute_paths_and_default_to_none() {
        let yaml: yaml_serde::Value = yaml_serde::from_str(
            "fs:\n  command: npx\n  roots: ['/srv/a/../b', '~/proj', '${TOKEN}/x']\nplain:\n  command: npx\n",
        )
        .unwrap();
        let lookup = |k: &str| match k {
            "HOME" => Some("/srv/me".to_string()),
            other => env(other).map(|v| format!("/{v}")),
        };
        let (specs, errors) = resolve_section(Some(&yaml), &lookup);
        assert!(errors.is_empty(), "{errors:?}");
        let fs = specs.iter().find(|s| s.name == "fs").unwrap();
        assert_eq!(
            fs.roots,
            vec![
                std::path::PathBuf::from("/srv/b"),
                std::path::PathBuf::from("/srv/me/proj"),
                std::path::PathBuf::from("/s3cret/x"),
            ]
        );
        let plain = specs.iter().find(|s| s.name == "plain").unwrap();
        assert!(plain.roots.is_empty());
    }

    #[test]
    fn relative_roots_are_refused_naming_the_key() {
        let yaml: yaml_serde::Value =
            yaml_serde::from_str("fs:\n  command: npx\n  roots: [project]\n").unwrap();
        let (specs, errors) = resolve_section(Some(&yaml), &env);
        assert!(specs.is_empty());
        assert!(errors[0].contains("mcp_servers.fs.roots"), "{errors:?}");
        assert!(
            errors[0].contains("`project` is not an absolute path"),
            "{errors:?}"
        );
    }

    #[test]
    fn parses_stdio_and_http_entries_with_defaults() {
        let yaml: yaml_serde::Value = yaml_serde::from_str(
            "fs:\n  command: npx\n  args: [-y, server, '${TOKEN}']\n  env: {API_KEY: '${TOKEN}'}\n  tools: {exclude: [write_file]}\nweb:\n  url: http://127.0.0.1:9/mcp\n  headers: {Authorization: 'Bearer ${TOKEN}'}\n  timeout: 5\n  enabled: false\n",
        )
        .unwrap();
        let servers = parse_section(Some(&yaml)).unwrap();
        let fs = servers["fs"].resolve("fs", &env).unwrap();
        assert_eq!(fs.call_timeout, Duration::from_secs(300));
        assert_eq!(fs.connect_timeout, Duration::from_secs(60));
        assert!(fs.enabled && !fs.parallel);
        assert_eq!(fs.sampling, Some(crate::sampling::SamplingCaps::default()));
        assert!(!fs.tools.allows("write_file") && fs.tools.allows("read_file"));
        let Transport::Stdio {
            command,
            args,
            env: child_env,
        } = fs.transport
        else {
            panic!("stdio expected")
        };
        assert_eq!(command, "npx");
        assert_eq!(args[2], "s3cret");
        assert_eq!(child_env.get("API_KEY").map(String::as_str), Some("s3cret"));
        assert_eq!(child_env.get("PATH").map(String::as_str), Some("/usr/bin"));
        assert!(
            !child_env.contains_key("SECRET_ELSEWHERE"),
            "only the minimal env is inherited"
        );
        let web = servers["web"].resolve("web", &env).unwrap();
        assert!(!web.enabled);
        assert_eq!(web.call_timeout, Duration::from_secs(5));
        assert_eq!(
            web.transport,
            Transport::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer s3cret".to_string())].into(),
                oauth: None,
            }
        );
    }

    #[test]
    fn rejects_bad_entries() {
        let both = McpServerConfig {
            command: Some("x".into()),
            url: Some("http://x".into()),
            ..Default::default()
        };
        assert_eq!(
            both.resolve("b", &env),
            Err(ConfigError::Transport("b".into()))
        );
        let missing = McpServerConfig {
            command: Some("${NOPE}".into()),
            ..Default::default()
        };
        assert!(
            matches!(missing.resolve("m", &env), Err(ConfigError::MissingVar { var, .. }) if var == "NOPE")
        );
        let yaml: yaml_serde::Value = yaml_serde::from_str("x: {comand: typo}").unwrap();
        assert!(matches!(
            parse_section(Some(&yaml)),
            Err(ConfigError::Shape(_))
        ));
        assert!(parse_section(None).unwrap().is_empty());
    }

    #[test]
    fn resolve_section_keeps_good_entries_and_reports_bad_ones() {
        let yaml: yaml_serde::Value =
            yaml_serde::from_str("a: {command: x}\nb: {url: '${NOPE}'}\n").unwrap();
        let (specs, errors) = resolve_section(Some(&yaml), &env);
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].name, "a");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("mcp_servers.b") && errors[0].contains("NOPE"));
    }

    #[test]
    fn include_then_exclude() {
        let f = ToolFilter {
            include: vec!["a".into(), "b".into()],
            exclude: vec!["b".into()],
        };
        assert!(f.allows("a") && !f.allows("b") && !f.allows("c"));
        assert_eq!(
            expand_vars("$HOME ${TOKEN}x", &env).unwrap(),
            "$HOME s3cretx"
        );
    }
}
