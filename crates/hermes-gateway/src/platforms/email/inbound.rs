//! Reading one inbound email (MIME through `mail-parser`) and deciding whether it is for the
//! agent at all.
//!
//! **Who sent it.** The identity is the bare `From:` address, lower-cased — never the
//! display name, which anyone can set. `From:` itself is only a claim, so (as Python Hermes
//! since GHSA-rxqh-5572-8m77) it counts only when the receiving server vouched for it in the
//! topmost `Authentication-Results` header (optionally the one whose authserv-id is
//! `EMAIL_AUTHSERV_ID`): `dmarc=pass`, or `spf=pass` with the envelope sender
//! (`smtp.mailfrom`, else `Return-Path`) in the `From:` domain, or `dkim=pass` with a
//! signing domain aligned with it. `EMAIL_TRUST_FROM_HEADER=true` (or allowing everyone)
//! turns the check off.
//!
//! **Never answered** (mail loops): our own address; a null envelope sender
//! (`Return-Path: <>`, bounces, RFC 3834 §2); `Auto-Submitted` other than `no` (RFC 3834);
//! `Precedence: bulk/list/junk/auto_reply`; `X-Auto-Response-Suppress`, `List-Id`,
//! `List-Unsubscribe`, `X-Autoreply`, `X-Autorespond`; delivery and read reports
//! (`multipart/report`); senders like `noreply@`, `mailer-daemon@`, `postmaster@` (Python
//! Hermes' list), checked on both the `From:` and the envelope address.

use mail_parser::{Address, HeaderValue, Message, MessageParser, MimeHeaders};

/// Local parts and address fragments of automated senders (Python Hermes' list).
const NOREPLY_PATTERNS: &[&str] = &[
    "noreply",
    "no-reply",
    "no_reply",
    "donotreply",
    "do-not-reply",
    "mailer-daemon",
    "postmaster",
    "bounce",
    "notifications@",
    "automated@",
    "auto-confirm",
    "auto-reply",
    "automailer",
];

/// How senders are checked.
#[derive(Debug, Clone, Default)]
pub struct SenderPolicy {
    /// Our own address (lower case): mail from it is never answered.
    pub own_address: String,
    /// Require an authenticated `From:` (see the module docs).
    pub require_authenticated: bool,
    /// Only trust `Authentication-Results` of this authserv-id (lower case), if set.
    pub authserv_id: Option<String>,
}

/// A file that came with the mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailFile {
    /// File name (from the part, or `attachment.<subtype>`).
    pub name: String,
    /// `type/subtype`.
    pub mime_type: String,
    /// Decoded contents.
    pub bytes: Vec<u8>,
}

/// An email for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    /// The sender's bare address, lower case.
    pub from: String,
    /// The display name, for prompts and logs only.
    pub name: Option<String>,
    /// The subject as written (may start with `Re:`).
    pub subject: String,
    /// `Message-ID` without angle brackets, if it has one.
    pub message_id: Option<String>,
    /// `In-Reply-To` ids.
    pub in_reply_to: Vec<String>,
    /// `References` ids, oldest first.
    pub references: Vec<String>,
    /// The text: the `text/plain` body, else the HTML body as text.
    pub body: String,
    /// Attachments (all of them; the adapter applies the size cap).
    pub files: Vec<MailFile>,
}

/// What to do with an inbound email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to the gateway.
    Accept(Box<Mail>),
    /// Drop it; the reason is for the log.
    Skip(String),
}

/// `Re:`, `RE:`, `Aw:`, … prefixes removed (for the thread's subject).
pub fn strip_reply_prefix(subject: &str) -> &str {
    let mut s = subject.trim();
    loop {
        let lower = s.get(..3).map(str::to_ascii_lowercase);
        match lower.as_deref() {
            Some("re:" | "aw:" | "sv:") => s = s[3..].trim_start(),
            _ => return s,
        }
    }
}

fn first_address(addr: Option<&Address<'_>>) -> Option<(String, Option<String>)> {
    let a = addr?.first()?;
    let address = a.address.as_deref()?.trim().to_ascii_lowercase();
    if !address.contains('@') {
        return None;
    }
    Some((address, a.name.as_ref().map(|n| n.trim().to_string())))
}

fn ids(v: &HeaderValue<'_>) -> Vec<String> {
    match v {
        HeaderValue::Text(t) => vec![t.to_string()],
        HeaderValue::TextList(l) => l.iter().map(|t| t.to_string()).collect(),
        _ => Vec::new(),
    }
}

fn domain_of(address: &str) -> &str {
    address.rsplit_once('@').map(|(_, d)| d).unwrap_or("")
}

/// Equal domains, or one a subdomain of the other (DMARC relaxed alignment).
fn aligned(a: &str, b: &str) -> bool {
    let (a, b) = (
        a.trim().trim_end_matches('.').to_ascii_lowercase(),
        b.trim().trim_end_matches('.').to_ascii_lowercase(),
    );
    !a.is_empty()
        && !b.is_empty()
        && (a == b || a.ends_with(&format!(".{b}")) || b.ends_with(&format!(".{a}")))
}

/// `name=value` pairs of an `Authentication-Results` value (lower-case names).
fn auth_results(value: &str) -> Vec<(String, String)> {
    value
        .split([';', ' ', '\t', '\r', '\n'])
        .filter_map(|tok| {
            let (k, v) = tok.split_once('=')?;
            Some((
                k.trim().to_ascii_lowercase(),
                v.trim().trim_matches('"').to_string(),
            ))
        })
        .collect()
}

/// Whether the receiving server vouched for `from`'s domain (see the module docs);
/// `Err` says why not.
fn sender_authenticated(
    msg: &Message<'_>,
    from: &str,
    envelope: Option<&str>,
    policy: &SenderPolicy,
) -> Result<(), String> {
    let from_domain = domain_of(from);
    let trusted = msg
        .headers_raw()
        .filter(|(name, _)| name.eq_ignore_ascii_case("Authentication-Results"))
        .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|v| match &policy.authserv_id {
            Some(id) => {
                let serv = v.split(';').next().unwrap_or("").trim();
                serv.eq_ignore_ascii_case(id) || aligned(serv, id)
            }
            None => true,
        })
        .ok_or_else(|| "no Authentication-Results from the receiving server".to_string())?;
    let pairs = auth_results(&trusted);
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if get("dmarc").is_some_and(|v| v.eq_ignore_ascii_case("pass")) {
        return Ok(());
    }
    if get("spf").is_some_and(|v| v.eq_ignore_ascii_case("pass")) {
        let mailfrom = get("smtp.mailfrom").or(envelope).unwrap_or("");
        let domain = if mailfrom.contains('@') {
            domain_of(mailfrom)
        } else {
            mailfrom
        };
        if aligned(domain, from_domain) {
            return Ok(());
        }
    }
    if get("dkim").is_some_and(|v| v.eq_ignore_ascii_case("pass"))
        && aligned(get("header.d").unwrap_or(""), from_domain)
    {
        return Ok(());
    }
    Err(format!(
        "From: not authenticated ({})",
        trusted.chars().take(120).collect::<String>()
    ))
}

/// The reason `msg` was generated by a machine (and must not be answered), if it was.
fn automated(msg: &Message<'_>, from: &str, envelope: Option<&str>) -> Option<String> {
    for (name, value) in msg.headers_raw() {
        let v = value.trim().to_ascii_lowercase();
        let n = name.to_ascii_lowercase();
        let hit = match n.as_str() {
            "auto-submitted" => v != "no",
            "precedence" => matches!(v.as_str(), "bulk" | "list" | "junk" | "auto_reply"),
            "x-auto-response-suppress"
            | "list-id"
            | "list-unsubscribe"
            | "x-autoreply"
            | "x-autorespond" => !v.is_empty(),
            _ => false,
        };
        if hit {
            return Some(format!("{name}: {}", value.trim()));
        }
    }
    if envelope == Some("") {
        return Some("null envelope sender (a bounce)".into());
    }
    if let Some(ct) = msg.root_part().content_type()
        && ct.ctype().eq_ignore_ascii_case("multipart")
        && ct
            .subtype()
            .is_some_and(|s| s.eq_ignore_ascii_case("report"))
    {
        return Some("a delivery or read report".into());
    }
    for addr in [Some(from), envelope].into_iter().flatten() {
        let lower = addr.to_ascii_lowercase();
        if let Some(p) = NOREPLY_PATTERNS.iter().find(|p| lower.contains(*p)) {
            return Some(format!("automated sender ({p})"));
        }
    }
    None
}

/// The envelope sender from `Return-Path` (`Some("")` for `<>`), if there is one.
fn envelope_sender(msg: &Message<'_>) -> Option<String> {
    let raw = msg
        .headers_raw()
        .find(|(n, _)| n.eq_ignore_ascii_case("Return-Path"))
        .map(|(_, v)| v.trim().to_string())?;
    let inner = raw.trim_start_matches('<').trim_end_matches('>').trim();
    Some(inner.to_ascii_lowercase())
}

/// Parses `raw` (a whole RFC 5322 message) and decides whether it is for the agent.
pub fn classify(raw: &[u8], policy: &SenderPolicy) -> Verdict {
    let Some(msg) = MessageParser::default().parse(raw) else {
        return Verdict::Skip("not a readable email".into());
    };
    let Some((from, name)) = first_address(msg.from()) else {
        return Verdict::Skip("no From: address".into());
    };
    if from == policy.own_address {
        return Verdict::Skip("our own mail".into());
    }
    let envelope = envelope_sender(&msg);
    if let Some(why) = automated(&msg, &from, envelope.as_deref()) {
        return Verdict::Skip(format!("not answered: {why}"));
    }
    if policy.require_authenticated
        && let Err(why) = sender_authenticated(&msg, &from, envelope.as_deref(), policy)
    {
        return Verdict::Skip(format!(
            "{why}; if your mail server does not add Authentication-Results, set EMAIL_TRUST_FROM_HEADER=true"
        ));
    }
    let files = msg
        .attachments()
        .map(|part| {
            let ct = part.content_type();
            let mime = ct
                .map(|c| format!("{}/{}", c.ctype(), c.subtype().unwrap_or("octet-stream")))
                .unwrap_or_else(|| "application/octet-stream".into())
                .to_ascii_lowercase();
            let name = part
                .attachment_name()
                .map(str::to_string)
                .unwrap_or_else(|| {
                    let sub = ct.and_then(|c| c.subtype()).unwrap_or("bin");
                    format!("attachment.{sub}")
                });
            let bytes = match part.message() {
                Some(inner) => inner.raw_message().to_vec(),
                None => part.contents().to_vec(),
            };
            MailFile {
                name,
                mime_type: mime,
                bytes,
            }
        })
        .collect();
    Verdict::Accept(Box::new(Mail {
        from,
        name: name.filter(|n| !n.is_empty()),
        subject: msg.subject().unwrap_or("").trim().to_string(),
        message_id: msg.message_id().map(str::to_string),
        in_reply_to: ids(msg.in_reply_to()),
        references: ids(msg.references()),
        body: msg
            .body_text(0)
            .map(|b| b.trim().to_string())
            .unwrap_or_default(),
        files,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(auth: bool) -> SenderPolicy {
        SenderPolicy {
            own_address: "bot@example.org".into(),
            require_authenticated: auth,
            authserv_id: Some("mx.example.org".into()),
        }
    }

    fn mail(headers: &str, body: &str) -> Vec<u8> {
        format!("{headers}\r\nMessage-ID: <m1@example.com>\r\n\r\n{body}\r\n").into_bytes()
    }

    fn accepted(v: Verdict) -> Mail {
        match v {
            Verdict::Accept(m) => *m,
            Verdict::Skip(why) => panic!("skipped: {why}"),
        }
    }

    #[test]
    fn identity_is_the_bare_from_address_never_the_display_name() {
        let raw = mail(
            "From: \"boss@example.org\" <Alice@Example.COM>\r\nSubject: Re: Plans\r\nIn-Reply-To: <p@x>\r\nReferences: <r@x> <p@x>",
            "hello",
        );
        let m = accepted(classify(&raw, &policy(false)));
        assert_eq!(m.from, "alice@example.com");
        assert_eq!(m.name.as_deref(), Some("boss@example.org"));
        assert_eq!(m.message_id.as_deref(), Some("m1@example.com"));
        assert_eq!(m.in_reply_to, vec!["p@x"]);
        assert_eq!(m.references, vec!["r@x", "p@x"]);
        assert_eq!(strip_reply_prefix(&m.subject), "Plans");
        assert_eq!(strip_reply_prefix("RE: Aw: re:x"), "x");
    }

    #[test]
    fn machines_bounces_lists_and_our_own_mail_are_never_answered() {
        for headers in [
            "From: bot@example.org",
            "From: a@example.com\r\nAuto-Submitted: auto-replied",
            "From: a@example.com\r\nPrecedence: bulk",
            "From: a@example.com\r\nList-Id: <l.example.com>",
            "From: a@example.com\r\nX-Autoreply: yes",
            "From: a@example.com\r\nReturn-Path: <>",
            "From: MAILER-DAEMON@example.com",
            "From: a@example.com\r\nReturn-Path: <bounces+x@lists.example.com>",
            "From: \"Alice\" <no-reply@example.com>",
            "From: a@example.com\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=b",
        ] {
            assert!(
                matches!(
                    classify(&mail(headers, "x"), &policy(false)),
                    Verdict::Skip(_)
                ),
                "{headers}"
            );
        }
        let ok = "From: a@example.com\r\nAuto-Submitted: no\r\nReturn-Path: <a@example.com>";
        accepted(classify(&mail(ok, "x"), &policy(false)));
        assert!(matches!(
            classify(b"\x00\x01", &policy(false)),
            Verdict::Skip(_)
        ));
    }

    #[test]
    fn a_from_address_counts_only_when_the_receiving_server_vouched_for_it() {
        let from = "From: Alice <alice@example.com>\r\n";
        let cases = [
            ("", false),
            (
                "Authentication-Results: mx.example.org; dmarc=pass header.from=example.com",
                true,
            ),
            // Injected by the sender below the server's own header: the first one counts.
            (
                "Authentication-Results: mx.example.org; dmarc=fail header.from=example.com\r\nAuthentication-Results: mx.example.org; dmarc=pass",
                false,
            ),
            // Another server's verdict is not ours.
            (
                "Authentication-Results: evil.example.net; dmarc=pass header.from=example.com",
                false,
            ),
            (
                "Authentication-Results: mx.example.org; spf=pass smtp.mailfrom=bounce@mail.example.com",
                true,
            ),
            (
                "Authentication-Results: mx.example.org; spf=pass smtp.mailfrom=x@other.example.net",
                false,
            ),
            (
                "Authentication-Results: mx.example.org; dkim=pass header.d=example.com",
                true,
            ),
            (
                "Authentication-Results: mx.example.org; dkim=pass header.d=example.net",
                false,
            ),
        ];
        for (ar, ok) in cases {
            let headers = format!("{from}{ar}");
            let got = classify(&mail(headers.trim_end(), "x"), &policy(true));
            assert_eq!(matches!(got, Verdict::Accept(_)), ok, "{ar}");
        }
        // Without the check any From: is taken as written.
        accepted(classify(&mail(from.trim_end(), "x"), &policy(false)));
    }

    #[test]
    fn text_and_html_bodies_and_attachments_are_read() {
        let raw = "From: a@example.com\r\nSubject: files\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=\"XX\"\r\n\r\n--XX\r\n\
Content-Type: text/html; charset=utf-8\r\n\r\n<p>Hello <b>there</b> &amp; café</p>\r\n--XX\r\n\
Content-Type: application/pdf; name=\"r.pdf\"\r\nContent-Disposition: attachment; filename=\"r.pdf\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\nJVBERi0x\r\n--XX--\r\n";
        let m = accepted(classify(raw.as_bytes(), &policy(false)));
        assert!(
            m.body.contains("Hello") && m.body.contains("café"),
            "{}",
            m.body
        );
        assert!(!m.body.contains('<'), "{}", m.body);
        assert_eq!(m.files.len(), 1);
        assert_eq!(m.files[0].name, "r.pdf");
        assert_eq!(m.files[0].mime_type, "application/pdf");
        assert_eq!(m.files[0].bytes, b"%PDF-1");
    }
}
