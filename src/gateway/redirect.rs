//! The RequestRedirect filter as an Octavia redirect policy.
//!
//! A redirect without a path modifier keeps the request's path and query, which is what
//! Octavia's `REDIRECT_PREFIX` does (haproxy `redirect prefix <value> code <code>` appends them);
//! `REDIRECT_TO_URL` would drop the path, so it is never used here. The prefix is a literal
//! `scheme://host[:port]`: the spec's defaults (the request's scheme, host and port) are filled
//! in from the listener and the entry's host. A request host can only be filled in when the
//! entry's host is one exact name: a wildcard or any-host entry without
//! `requestRedirect.hostname` is served per known name of the Gateway, each entry with that one
//! exact host (`build::redirects`), and never redirected to a host the client did not ask for.

use super::api::HTTPRequestRedirectFilter;
use super::hostnames::is_wildcard;
use super::protocol::Protocol;

/// Octavia L7 policy action of a redirect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectKind {
    /// `REDIRECT_PREFIX`: `redirect_prefix` + the request's path and query.
    Prefix,
}

/// An Octavia redirect policy: action, `redirect_prefix` and `redirect_http_code`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedirectAction {
    pub kind: RedirectKind,
    pub prefix: String,
    pub code: u16,
}

/// Where the filter applies: the listener (its protocol and port) and the entry's host.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RedirectFrom<'a> {
    pub protocol: Protocol,
    pub port: u16,
    pub host: Option<&'a str>,
}

fn well_known(scheme: &str) -> u16 {
    if scheme == "https" { 443 } else { 80 }
}

/// The Octavia redirect for `f` applied at `from`; `Err` names the field that cannot be served.
/// `field` is the filter's path in the route (for the message).
pub(crate) fn octavia_redirect(
    f: &HTTPRequestRedirectFilter,
    from: RedirectFrom<'_>,
    field: &str,
) -> Result<RedirectAction, String> {
    let scheme = f.scheme.clone().unwrap_or_else(|| from.protocol.scheme().to_string());
    let host = match (&f.hostname, from.host) {
        (Some(h), _) => h.clone(),
        (None, Some(h)) if !is_wildcard(h) => h.to_string(),
        _ => {
            return Err(format!(
                "{field}.requestRedirect.hostname: needed on a route without one exact hostname (Octavia's redirect prefix is literal and cannot repeat the request's host)"
            ));
        }
    };
    // The spec: an explicit port; else the scheme's well-known port when the scheme is set;
    // else the listener's port. A well-known port is left out of the Location.
    let port = match (f.port, &f.scheme) {
        (Some(p), _) => u16::try_from(p).map_err(|_| format!("{field}.requestRedirect.port: {p} is out of range"))?,
        (None, Some(s)) => well_known(s),
        (None, None) => from.port,
    };
    let prefix =
        if port == well_known(&scheme) { format!("{scheme}://{host}") } else { format!("{scheme}://{host}:{port}") };
    let code = f.status_code.and_then(|c| u16::try_from(c).ok()).unwrap_or(302);
    Ok(RedirectAction { kind: RedirectKind::Prefix, prefix, code })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(scheme: Option<&str>, host: Option<&str>, port: Option<i32>, code: Option<i32>) -> HTTPRequestRedirectFilter {
        HTTPRequestRedirectFilter {
            scheme: scheme.map(Into::into),
            hostname: host.map(Into::into),
            path: None,
            port,
            status_code: code,
        }
    }

    const HTTP80: RedirectFrom<'static> =
        RedirectFrom { protocol: Protocol::Http, port: 80, host: Some("a.example.com") };

    fn go(x: HTTPRequestRedirectFilter, from: RedirectFrom<'_>) -> Result<(String, u16), String> {
        octavia_redirect(&x, from, "spec.rules[0].filters[0]").map(|r| (r.prefix, r.code))
    }

    #[test]
    fn hostname_only_keeps_scheme_and_listener_port_and_defaults_to_302() {
        assert_eq!(go(f(None, Some("example.org"), None, None), HTTP80), Ok(("http://example.org".into(), 302)));
        let on8080 = RedirectFrom { port: 8080, ..HTTP80 };
        assert_eq!(
            go(f(None, Some("example.org"), None, Some(301)), on8080),
            Ok(("http://example.org:8080".into(), 301))
        );
    }

    #[test]
    fn scheme_sets_the_well_known_port_unless_a_port_is_given() {
        let on8080 = RedirectFrom { port: 8080, ..HTTP80 };
        assert_eq!(go(f(Some("https"), None, None, None), on8080), Ok(("https://a.example.com".into(), 302)));
        assert_eq!(
            go(f(Some("https"), None, Some(8443), None), on8080),
            Ok(("https://a.example.com:8443".into(), 302))
        );
        assert_eq!(go(f(Some("http"), None, Some(80), Some(308)), on8080), Ok(("http://a.example.com".into(), 308)));
    }

    #[test]
    fn port_only_keeps_the_listener_scheme() {
        let https = RedirectFrom { protocol: Protocol::Https, port: 443, host: Some("a.example.com") };
        assert_eq!(go(f(None, None, Some(8443), Some(307)), https), Ok(("https://a.example.com:8443".into(), 307)));
        assert_eq!(go(f(None, None, Some(443), None), https), Ok(("https://a.example.com".into(), 302)));
    }

    #[test]
    fn a_request_host_that_is_not_one_exact_name_is_refused_naming_the_field() {
        let any = RedirectFrom { host: None, ..HTTP80 };
        let wild = RedirectFrom { host: Some("*.example.com"), ..HTTP80 };
        for from in [any, wild] {
            let e = go(f(Some("https"), None, None, None), from).unwrap_err();
            assert!(e.contains("spec.rules[0].filters[0].requestRedirect.hostname"), "{e}");
        }
        assert!(go(f(Some("https"), Some("x.org"), None, None), any).is_ok());
    }
}
