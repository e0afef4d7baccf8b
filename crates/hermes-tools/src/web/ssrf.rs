//! The address policy of `web_extract` (server-side request forgery guard): which IP
//! addresses a fetch may connect to, checked on literal IPs in every URL (the first and each
//! redirect) and on every address a host name resolves to (a DNS resolver that filters, so
//! a name that resolves — or re-resolves, DNS rebinding — to a local address never gets a
//! connection).
//!
//! Refused by default (`web.allow_private_urls: false`): loopback (127.0.0.0/8, ::1),
//! RFC 1918 private (10/8, 172.16/12, 192.168/16), link-local (169.254/16 — with the cloud
//! metadata address 169.254.169.254 — and fe80::/10), unique-local (fc00::/7, e.g.
//! fd00:ec2::254), shared address space (100.64/10, RFC 6598), "this network" (0/8, ::),
//! benchmarking (198.18/15), documentation ranges, multicast, broadcast and reserved
//! (240/4). IPv4 addresses embedded in IPv6 (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
//! NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged as the IPv4 address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why `ip` may not be fetched by default, or `None` for a public address.
pub fn forbidden_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => v4_reason(v4),
            None => v6_reason(v6),
        },
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        return Some("a cloud metadata address");
    }
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private network address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if o[0] == 0 {
        Some("a \"this network\" address")
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some("a shared (carrier-grade NAT) address")
    } else if o[0] == 198 && (o[1] & 0xfe) == 18 {
        Some("a benchmarking address")
    } else if ip.is_documentation() {
        Some("a documentation address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if ip.is_broadcast() || o[0] >= 240 {
        Some("a reserved address")
    } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
        Some("an IETF protocol assignment address")
    } else {
        None
    }
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if (s[0] & 0xfe00) == 0xfc00 {
        Some("a unique-local address")
    } else if (s[0] & 0xffc0) == 0xfe80 || (s[0] & 0xffc0) == 0xfec0 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if s[0] == 0x2001 && s[1] == 0x0db8 {
        Some("a documentation address")
    } else if s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0 {
        Some("a discard-only address")
    } else {
        None
    }
}

/// The IPv4 address inside an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 IPv6 address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6].iter().all(|&x| x == 0) && !(s[6] == 0 && s[7] <= 1) {
        return Some(low); // ::a.b.c.d (not :: or ::1, judged as IPv6)
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|&x| x == 0) {
        return Some(low);
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// A fetch refused by the address policy. Found in a reqwest error's source chain with
/// [`find_refusal`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused: {host} is {reason} ({addr}); set web.allow_private_urls: true to allow it")]
pub struct Refused {
    /// The host as written in the URL.
    pub host: String,
    /// The refused address.
    pub addr: IpAddr,
    /// Which class the address is in (e.g. "a loopback address").
    pub reason: &'static str,
}

/// Checks a URL before it is requested (the first URL and each redirect): the scheme must be
/// `http` or `https`, and a literal IP host must be allowed. Host names are checked later,
/// when they resolve.
///
/// # Errors
/// A message for the model: the scheme that is not allowed, or the [`Refused`] address.
pub fn check_url(url: &reqwest::Url, allow_private: bool) -> Result<(), String> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "refused: only http and https URLs can be fetched (got `{other}:`)"
            ));
        }
    }
    if allow_private {
        return Ok(());
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        Some(url::Host::Domain(_)) => return Ok(()),
        None => return Err("refused: the URL has no host".to_string()),
    };
    match forbidden_reason(ip) {
        Some(reason) => Err(Refused {
            host: url.host_str().unwrap_or_default().to_string(),
            addr: ip,
            reason,
        }
        .to_string()),
        None => Ok(()),
    }
}

/// The [`Refused`] error somewhere in `err`'s source chain.
pub fn find_refusal<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(r) = e.downcast_ref::<Refused>() {
            return Some(r);
        }
        cur = e.source();
    }
    None
}

/// A DNS resolver (the system's, through tokio) that drops forbidden addresses: a name whose
/// addresses are all forbidden fails with [`Refused`], so no connection is made.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| match forbidden_reason(a.ip()) {
                    Some(reason) => {
                        refused.get_or_insert((a.ip(), reason));
                        false
                    }
                    None => true,
                })
                .collect();
            if allowed.is_empty()
                && let Some((addr, reason)) = refused
            {
                return Err(Box::new(Refused { host, addr, reason }) as _);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn reason(s: &str) -> Option<&'static str> {
        forbidden_reason(s.parse().unwrap())
    }

    #[test]
    fn local_and_special_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.5.4",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.1.1",
            "0.0.0.0",
            "100.64.0.1",
            "100.100.100.200",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "fc00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "ff02::1",
            "2001:db8::1",
        ] {
            assert!(reason(ip).is_some(), "{ip} must be refused");
        }
        assert_eq!(reason("169.254.169.254"), Some("a cloud metadata address"));
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "2002:0808:0808::",
        ] {
            assert_eq!(reason(ip), None, "{ip} must pass");
        }
    }

    #[test]
    fn urls_are_checked_for_scheme_and_literal_ips() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(check_url(&u("https://example.com/a"), false).is_ok());
        let e = check_url(&u("file:///etc/passwd"), true).unwrap_err();
        assert!(e.contains("only http and https"), "{e}");
        let e = check_url(&u("http://127.0.0.1:8080/"), false).unwrap_err();
        assert!(e.contains("127.0.0.1 is a loopback address"), "{e}");
        assert!(e.contains("web.allow_private_urls"), "{e}");
        let e = check_url(&u("http://[::ffff:a9fe:a9fe]/latest"), false).unwrap_err();
        assert!(e.contains("cloud metadata"), "{e}");
        assert!(check_url(&u("http://127.0.0.1:8080/"), true).is_ok());
    }
}
