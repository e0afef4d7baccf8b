//! The file format of a declarative tool, `HERMES_HOME/tools/<name>.yaml` (seed 004 §3.2;
//! issue 26 item 4), and its checks. Every problem of a file is collected (not only the
//! first), each with the path of the offending key; [`super::load_file`] turns paths into
//! `line:column`.
//!
//! ```yaml
//! name: stock_checker                 # = the file name; letters, digits, `_`, `-` (≤ 64)
//! description: Live stock of a product by SKU.
//! version: "1.2.0"
//! input_schema: {type: object, properties: {sku: {type: string}}, required: [sku]}
//! output_schema: {type: object, properties: {in_stock: {type: boolean}}}   # optional
//! endpoint:
//!   method: GET                       # GET (default), POST, PUT, PATCH or DELETE
//!   url: https://api.example/v1/stock/{sku}
//!   headers: {Authorization: "Bearer ${STOCK_API_KEY}"}
//! timeout_ms: 5000                    # 100 … 120000, default 10000
//! health_endpoint: https://api.example/v1/health          # optional
//! health_interval_ms: 30000           # 1000 … 3600000, default 30000
//! fallback_endpoint: https://backup.example/v1/stock/{sku} # or fallback_text, optional
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use yaml_serde::Value as Yaml;

use super::locate::Seg;
use super::schema_check::{Found, check_schema};
use super::template::Template;
use crate::web::ssrf::check_url;

/// Default of `timeout_ms`.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Range of `timeout_ms`.
pub const TIMEOUT_MS_RANGE: (u64, u64) = (100, 120_000);
/// Default of `health_interval_ms`.
pub const DEFAULT_HEALTH_INTERVAL_MS: u64 = 30_000;
/// Range of `health_interval_ms`.
pub const HEALTH_INTERVAL_MS_RANGE: (u64, u64) = (1_000, 3_600_000);

/// The top-level keys of a tool file.
pub const KEYS: &[&str] = &[
    "name",
    "description",
    "version",
    "input_schema",
    "output_schema",
    "endpoint",
    "timeout_ms",
    "health_endpoint",
    "health_interval_ms",
    "fallback_endpoint",
    "fallback_text",
];
/// The keys of `endpoint`.
pub const ENDPOINT_KEYS: &[&str] = &["method", "url", "headers"];
/// The methods of `endpoint.method`.
pub const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];

/// What a call does when the endpoint is unhealthy or fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// Nothing: the call fails, and the tool is hidden until healthy.
    None,
    /// `fallback_text`: answered with this text.
    Text(String),
    /// `fallback_endpoint`: the same request sent to this URL.
    Endpoint(Template),
}

/// A checked tool file.
#[derive(Debug, Clone)]
pub struct DeclaredSpec {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// `version`.
    pub version: String,
    /// `input_schema` (the tool's parameters).
    pub input_schema: Value,
    /// `output_schema`: every answer must match it.
    pub output_schema: Option<Value>,
    /// `endpoint.method`.
    pub method: reqwest::Method,
    /// `endpoint.url`.
    pub url: Template,
    /// `endpoint.headers`: name and value template (`${NAME}` only), in file order.
    pub headers: Vec<(String, Template)>,
    /// `timeout_ms`: the whole request, and each health probe.
    pub timeout: Duration,
    /// `health_endpoint`.
    pub health_endpoint: Option<Template>,
    /// `health_interval_ms`.
    pub health_interval: Duration,
    /// `fallback_endpoint` / `fallback_text`.
    pub fallback: Fallback,
}

/// Checks a file whose YAML is `doc`. `stem` is the file name without `.yaml`; `env` holds
/// the variables `${NAME}` may use; `allow_private` is `web.allow_private_urls`.
///
/// # Errors
/// Every problem found, each with the path of its key.
pub(crate) fn check(
    doc: &Yaml,
    stem: &str,
    env: &BTreeMap<String, String>,
    allow_private: bool,
) -> Result<DeclaredSpec, Vec<Found>> {
    let mut out: Vec<Found> = Vec::new();
    let Some(map) = doc.as_mapping() else {
        out.push((
            Vec::new(),
            format!("a tool file is a mapping of keys ({})", KEYS.join(", ")),
        ));
        return Err(out);
    };
    unknown_keys(map, &[], KEYS, &mut out);
    let get = |k: &str| map.get(k);
    let at = |k: &str| vec![Seg::key(k)];

    let name = required_str(get("name"), &at("name"), &mut out);
    if let Some(n) = &name {
        if n.is_empty()
            || n.len() > 64
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            out.push((
                at("name"),
                format!("`{n}`: a tool name is 1 to 64 letters, digits, `_` or `-`"),
            ));
        } else if n != stem {
            out.push((
                at("name"),
                format!(
                    "the name `{n}` differs from the file's name `{stem}`: name the file `{n}.yaml`"
                ),
            ));
        }
    }
    let description = required_str(get("description"), &at("description"), &mut out);
    if description.as_deref().is_some_and(|d| d.trim().is_empty()) {
        out.push((
            at("description"),
            "the description is empty: the model reads it to decide when to call the tool"
                .to_string(),
        ));
    }
    let version = required_str(get("version"), &at("version"), &mut out);

    let input_schema = match get("input_schema") {
        None => {
            out.push((
                Vec::new(),
                "`input_schema` is missing (the JSON Schema of the arguments)".to_string(),
            ));
            None
        }
        Some(y) => json_of(y, &at("input_schema"), &mut out).inspect(|s| {
            check_schema(s, &at("input_schema"), true, &mut out);
        }),
    };
    let output_schema = get("output_schema").and_then(|y| {
        json_of(y, &at("output_schema"), &mut out).inspect(|s| {
            check_schema(s, &at("output_schema"), false, &mut out);
        })
    });
    let properties: Vec<String> = input_schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();

    let mut method = reqwest::Method::GET;
    let mut url = None;
    let mut headers = Vec::new();
    match get("endpoint") {
        None => out.push((
            Vec::new(),
            "`endpoint` is missing (`method`, `url`, `headers`)".to_string(),
        )),
        Some(Yaml::Mapping(ep)) => {
            let base = at("endpoint");
            unknown_keys(ep, &base, ENDPOINT_KEYS, &mut out);
            let sub = |k: &str| {
                let mut p = base.clone();
                p.push(Seg::key(k));
                p
            };
            if let Some(m) = optional_str(ep.get("method"), &sub("method"), &mut out) {
                let upper = m.to_ascii_uppercase();
                if METHODS.contains(&upper.as_str()) {
                    method = reqwest::Method::from_bytes(upper.as_bytes())
                        .unwrap_or(reqwest::Method::GET);
                } else {
                    out.push((
                        sub("method"),
                        format!("`{m}` is not one of {}", METHODS.join(", ")),
                    ));
                }
            }
            if let Some(text) = required_str(ep.get("url"), &sub("url"), &mut out) {
                url = url_template(
                    &text,
                    &sub("url"),
                    &properties,
                    env,
                    allow_private,
                    &mut out,
                );
            }
            match ep.get("headers") {
                None | Some(Yaml::Null) => {}
                Some(Yaml::Mapping(h)) => {
                    for (k, v) in h {
                        let Some(hname) = k.as_str() else {
                            out.push((sub("headers"), "header names are strings".to_string()));
                            continue;
                        };
                        let mut p = sub("headers");
                        p.push(Seg::key(hname));
                        if reqwest::header::HeaderName::from_bytes(hname.as_bytes()).is_err() {
                            out.push((p.clone(), format!("`{hname}` is not a valid header name")));
                        }
                        let Some(value) = v.as_str() else {
                            out.push((p, "a header value is a string (in quotes)".to_string()));
                            continue;
                        };
                        match Template::parse(value, false) {
                            Ok(t) => headers.push((hname.to_string(), t)),
                            Err(e) => out.push((p, e)),
                        }
                    }
                }
                Some(_) => out.push((
                    sub("headers"),
                    "`headers` is a mapping of header names to values".to_string(),
                )),
            }
        }
        Some(_) => out.push((
            at("endpoint"),
            "`endpoint` is a mapping with `method`, `url` and `headers`".to_string(),
        )),
    }

    let timeout_ms = ranged(
        get("timeout_ms"),
        &at("timeout_ms"),
        TIMEOUT_MS_RANGE,
        &mut out,
    )
    .unwrap_or(DEFAULT_TIMEOUT_MS);
    let interval_ms = ranged(
        get("health_interval_ms"),
        &at("health_interval_ms"),
        HEALTH_INTERVAL_MS_RANGE,
        &mut out,
    )
    .unwrap_or(DEFAULT_HEALTH_INTERVAL_MS);
    let health_endpoint = optional_str(get("health_endpoint"), &at("health_endpoint"), &mut out)
        .and_then(|text| {
            url_template(
                &text,
                &at("health_endpoint"),
                &[],
                env,
                allow_private,
                &mut out,
            )
        });
    let fallback_url = optional_str(get("fallback_endpoint"), &at("fallback_endpoint"), &mut out)
        .and_then(|text| {
            url_template(
                &text,
                &at("fallback_endpoint"),
                &properties,
                env,
                allow_private,
                &mut out,
            )
        });
    let fallback_text = optional_str(get("fallback_text"), &at("fallback_text"), &mut out);
    let fallback = match (fallback_url, fallback_text) {
        (Some(_), Some(_)) => {
            out.push((
                at("fallback_text"),
                "give `fallback_endpoint` or `fallback_text`, not both".to_string(),
            ));
            Fallback::None
        }
        (Some(u), None) => Fallback::Endpoint(u),
        (None, Some(t)) if t.trim().is_empty() => {
            out.push((at("fallback_text"), "`fallback_text` is empty".to_string()));
            Fallback::None
        }
        (None, Some(t)) => Fallback::Text(t),
        (None, None) => Fallback::None,
    };

    match (name, description, version, input_schema, url) {
        (Some(name), Some(description), Some(version), Some(input_schema), Some(url))
            if out.is_empty() =>
        {
            Ok(DeclaredSpec {
                name,
                description,
                version,
                input_schema,
                output_schema,
                method,
                url,
                headers,
                timeout: Duration::from_millis(timeout_ms),
                health_endpoint,
                health_interval: Duration::from_millis(interval_ms),
                fallback,
            })
        }
        _ => Err(out),
    }
}

/// Refuses the keys of `map` (at `base`) that are not in `known`.
fn unknown_keys(map: &yaml_serde::Mapping, base: &[Seg], known: &[&str], out: &mut Vec<Found>) {
    for key in map.keys() {
        let name = match key {
            Yaml::String(s) => s.clone(),
            other => yaml_serde::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        if !known.contains(&name.as_str()) {
            let mut p = base.to_vec();
            p.push(Seg::key(name.clone()));
            out.push((
                p,
                format!(
                    "unknown key `{name}`; the keys here are {}",
                    known.join(", ")
                ),
            ));
        }
    }
}

/// A string that must be there.
fn required_str(v: Option<&Yaml>, at: &[Seg], out: &mut Vec<Found>) -> Option<String> {
    if v.is_none() {
        let key = match at.last() {
            Some(Seg::Key(k)) => k.clone(),
            _ => String::new(),
        };
        // A missing key has no place of its own: its parent's is used.
        out.push((
            at[..at.len().saturating_sub(1)].to_vec(),
            format!("`{key}` is missing"),
        ));
        return None;
    }
    optional_str(v, at, out)
}

/// A string when present; a number or boolean is refused (write it in quotes).
fn optional_str(v: Option<&Yaml>, at: &[Seg], out: &mut Vec<Found>) -> Option<String> {
    match v? {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Null => None,
        Yaml::Number(n) => {
            out.push((
                at.to_vec(),
                format!("must be a string: write \"{n}\" in quotes"),
            ));
            None
        }
        _ => {
            out.push((at.to_vec(), "must be a string".to_string()));
            None
        }
    }
}

/// An integer in `range` when present.
fn ranged(v: Option<&Yaml>, at: &[Seg], range: (u64, u64), out: &mut Vec<Found>) -> Option<u64> {
    let v = v?;
    let n = match v {
        Yaml::Number(n) => n.as_u64(),
        Yaml::Null => return None,
        _ => None,
    };
    match n {
        Some(n) if (range.0..=range.1).contains(&n) => Some(n),
        Some(n) => {
            out.push((
                at.to_vec(),
                format!(
                    "{n} is out of range: {} to {} milliseconds",
                    range.0, range.1
                ),
            ));
            None
        }
        None => {
            let shown = yaml_serde::to_string(v).unwrap_or_default();
            out.push((
                at.to_vec(),
                format!(
                    "must be an integer number of milliseconds, not {}",
                    shown.trim()
                ),
            ));
            None
        }
    }
}

/// The YAML value as JSON (schemas).
fn json_of(v: &Yaml, at: &[Seg], out: &mut Vec<Found>) -> Option<Value> {
    match serde_json::to_value(v) {
        Ok(j) => Some(j),
        Err(e) => {
            out.push((at.to_vec(), format!("not expressible as JSON: {e}")));
            None
        }
    }
}

/// Parses and checks a URL template: placeholders well formed, `{arg}`s only after the
/// authority and naming properties of `input_schema` (`properties`), the URL parses with
/// sample values, is http or https, and passes the web tools' address guard for literal IPs
/// ([`check_url`]; host names are checked when they resolve, on every request).
fn url_template(
    text: &str,
    at: &[Seg],
    properties: &[String],
    env: &BTreeMap<String, String>,
    allow_private: bool,
    out: &mut Vec<Found>,
) -> Option<Template> {
    let t = match Template::parse(text, true) {
        Ok(t) => t,
        Err(e) => {
            out.push((at.to_vec(), e));
            return None;
        }
    };
    let before = out.len();
    for arg in t.args() {
        if !properties.iter().any(|p| p == arg) {
            out.push((
                at.to_vec(),
                format!("`{{{arg}}}` is not a property of `input_schema`"),
            ));
        }
    }
    if !t.args().is_empty() && !t.args_after_authority() {
        out.push((at.to_vec(), "`{…}` arguments may only follow the host (`https://host/…{arg}`), never choose the scheme or host".to_string()));
    }
    match reqwest::Url::parse(&t.sample(env, "x")) {
        Err(e) => out.push((at.to_vec(), format!("not a valid URL ({e})"))),
        Ok(url) => {
            if let Err(e) = check_url(&url, allow_private) {
                out.push((at.to_vec(), e));
            }
        }
    }
    (out.len() == before).then_some(t)
}
