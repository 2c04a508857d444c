//! HTTP(S) GETs: every download, the package index's page and a manifest given by URL.
//!
//! Redirects are followed here, not by ureq: each hop must be http or https (a redirect
//! to `file://` or anything else is refused, naming both URLs), at most [`MAX_REDIRECTS`]
//! of them. A GET has a deadline: [`ALLOWANCE`] plus its size at [`MIN_RATE`], the size
//! being what the server says (`Content-Length`, or the caller's own limit where that is
//! smaller); without one, the body must keep an average of [`MIN_RATE`] after the
//! allowance. A read that waits [`STALL`] for a byte ends it too.
//!
//! A proxy is used where the command line's environment names one ([`use_proxies`], from
//! [`Proxies`]): each hop through the one for its scheme, unless its host is on the
//! `NO_PROXY` list. Without one, no proxy: ureq's own reading of the environment is
//! overridden (`proxy(None)`), the environment being the command line's to read.

use std::io::Read;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};

use crate::detect::env::Proxies;

/// The most redirects one GET follows.
pub const MAX_REDIRECTS: usize = 5;
/// The slowest average a GET may keep (bytes a second): 50 kB/s.
pub const MIN_RATE: u64 = 50_000;
/// The time a GET has on top of its size at [`MIN_RATE`].
pub const ALLOWANCE: Duration = Duration::from_secs(120);
/// The longest one read may wait for data.
pub const STALL: Duration = Duration::from_secs(60);
const CONNECT: Duration = Duration::from_secs(30);

/// The proxies of this run: set once by the command line, before anything is fetched.
static PROXIES: std::sync::OnceLock<Proxies> = std::sync::OnceLock::new();

/// Every GET from now on goes through `p`'s proxies (none where `p` names none).
pub fn use_proxies(p: Proxies) {
    let _ = PROXIES.set(p);
}

/// The proxy for `at`, its scheme's, with the `NO_PROXY` list, as ureq takes it; `None`:
/// straight to the host.
fn proxy_for(p: &Proxies, at: &url::Url) -> Result<Option<ureq::Proxy>> {
    let (var, value) = match at.scheme() {
        "https" => ("HTTPS_PROXY (or ALL_PROXY)", &p.https),
        _ => ("HTTP_PROXY (or ALL_PROXY)", &p.http),
    };
    let Some(value) = value else {
        return Ok(None);
    };
    let bad = |e: ureq::Error| {
        anyhow!(
            "{var} is `{}`, which is not a proxy URL ({e}): give one such as \
             `http://proxy.example:3128` (or unset it to go without a proxy)",
            redacted(value)
        )
    };
    let parsed = ureq::Proxy::new(value).map_err(bad)?;
    // ureq's own parser, its NO_PROXY list added (Proxy::new takes none).
    let mut b = ureq::Proxy::builder(parsed.protocol())
        .host(parsed.host())
        .port(parsed.port());
    if let Some(u) = parsed.username() {
        b = b.username(u);
    }
    if let Some(pw) = parsed.password() {
        b = b.password(pw);
    }
    for e in p.no_proxy.iter().flat_map(|n| n.split(',')) {
        if !e.trim().is_empty() {
            b = b.no_proxy(e.trim());
        }
    }
    // ureq goes straight to a host on the list.
    b.build().map(Some).map_err(bad)
}

/// A proxy URL with its password (or user) left out, for messages.
fn redacted(value: &str) -> String {
    match value.rsplit_once('@') {
        Some((before, host)) => {
            let scheme = before.split_once("://").map_or("", |(s, _)| s);
            let sep = if scheme.is_empty() { "" } else { "://" };
            format!("{scheme}{sep}***@{host}")
        }
        None => value.to_string(),
    }
}

/// A GET's answer (2xx), its body read through [`Read`] within the deadline.
pub struct Response {
    /// The URL asked for (before redirects), for messages.
    url: String,
    /// `Content-Length`, where the server gave one.
    pub len: Option<u64>,
    headers: ureq::http::HeaderMap,
    reader: ureq::BodyReader<'static>,
    start: Instant,
    /// The deadline where the size is known.
    budget: Option<Duration>,
    got: u64,
}

/// The deadline of a body of `len` bytes: [`ALLOWANCE`] plus `len` at [`MIN_RATE`].
pub fn deadline(len: u64) -> Duration {
    ALLOWANCE + Duration::from_secs(len / MIN_RATE)
}

fn agent() -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_connect(Some(CONNECT))
        .timeout_recv_response(Some(ALLOWANCE))
        .timeout_per_read(Some(STALL))
        // Not ureq's reading of the environment: each request is given its own
        // (`proxy_for`).
        .proxy(None)
        .tls_config(tls)
        .build()
        .into()
}

fn http_url(s: &str) -> Option<url::Url> {
    url::Url::parse(s)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
}

/// GETs `url` (with `Accept: accept` where given), following up to [`MAX_REDIRECTS`]
/// http(s) redirects. `max` is the most the caller reads of the body (its deadline is
/// that of `max` bytes where the server says more or nothing). Statuses other than 2xx
/// and 3xx are errors naming the URL and the status.
pub fn get(url: &str, accept: Option<&str>, max: Option<u64>) -> Result<Response> {
    match request(url, accept, max, STALL, false)? {
        Some(r) => Ok(r),
        None => unreachable!("a missing file is an error here"),
    }
}

/// [`get`] of something that may not be there: `None` where the server answers 404 or
/// 410; waiting `stall` for the answer or for a byte of it ends it (a substituter is
/// skipped sooner than a download the build cannot do without).
pub fn get_if_there(
    url: &str,
    accept: Option<&str>,
    max: Option<u64>,
    stall: Duration,
) -> Result<Option<Response>> {
    request(url, accept, max, stall, true)
}

fn request(
    url: &str,
    accept: Option<&str>,
    max: Option<u64>,
    stall: Duration,
    missing_ok: bool,
) -> Result<Option<Response>> {
    let start = Instant::now();
    let mut at = http_url(url)
        .ok_or_else(|| anyhow!("`{url}` is not an http or https URL: only those are downloaded"))?;
    let agent = agent();
    let proxies = PROXIES.get_or_init(Proxies::default);
    let mut hops = 0;
    loop {
        let proxy = proxy_for(proxies, &at)?;
        let through = match &proxy {
            Some(p) if !p.is_no_proxy(&at.as_str().parse().unwrap_or_default()) => format!(
                " (through the proxy {}:{}, from HTTPS_PROXY, HTTP_PROXY or ALL_PROXY)",
                p.host(),
                p.port()
            ),
            _ => String::new(),
        };
        let mut req = agent
            .get(at.as_str())
            .config()
            .proxy(proxy)
            .timeout_per_read(Some(stall))
            .timeout_recv_response(Some(if missing_ok { stall } else { ALLOWANCE }))
            .build();
        if let Some(a) = accept {
            req = req.header("Accept", a);
        }
        let resp = req.call().map_err(|e| match e {
            ureq::Error::Timeout(_) => anyhow!(
                "{at}{through}: no complete answer within {} s ({e})",
                if missing_ok { stall } else { ALLOWANCE }.as_secs()
            ),
            _ => anyhow!("{at}{through}: {e}"),
        })?;
        let status = resp.status();
        if status.is_redirection() && status != ureq::http::StatusCode::NOT_MODIFIED {
            let loc = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| anyhow!("{at} answers {status} without a (readable) Location"))?;
            let next = at
                .join(loc)
                .map_err(|e| anyhow!("{at} redirects to `{loc}`, which is not a URL: {e}"))?;
            if !matches!(next.scheme(), "http" | "https") {
                bail!("{at} redirects to `{next}`: only http and https URLs are downloaded, so it is not followed");
            }
            hops += 1;
            if hops > MAX_REDIRECTS {
                bail!("{url} redirects more than {MAX_REDIRECTS} times (the last to {next}): not followed further (a redirect loop?)");
            }
            at = next;
            continue;
        }
        if missing_ok && matches!(status.as_u16(), 404 | 410) {
            return Ok(None);
        }
        if !status.is_success() {
            bail!("{at} answers HTTP {status}");
        }
        let len = resp
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let size = match (len, max) {
            (Some(l), Some(m)) => Some(l.min(m)),
            (l, m) => l.or(m),
        };
        return Ok(Some(Response {
            url: url.to_string(),
            len,
            headers: resp.headers().clone(),
            reader: resp.into_body().into_reader(),
            start,
            budget: size.map(deadline),
            got: 0,
        }));
    }
}

impl Response {
    /// The answer's header `name`, where it has one that is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether the GET ran past its deadline, having read `got` bytes after `elapsed`.
    fn too_slow(&self, elapsed: Duration) -> bool {
        match self.budget {
            Some(b) => elapsed > b,
            // The average since the allowance ran out.
            None => elapsed > deadline(self.got),
        }
    }
}

impl Read for Response {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.reader.read(buf)?;
        self.got += n as u64;
        let elapsed = self.start.elapsed();
        if self.too_slow(elapsed) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "{} is too slow: {} bytes in {} s, under {} kB/s after the first {} s",
                    self.url,
                    self.got,
                    elapsed.as_secs(),
                    MIN_RATE / 1000,
                    ALLOWANCE.as_secs()
                ),
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_grows_with_the_size() {
        assert_eq!(deadline(0), ALLOWANCE);
        // 1 GB at 50 kB/s: 20 000 s, plus the allowance.
        assert_eq!(deadline(1_000_000_000).as_secs(), 20_000 + 120);
    }

    #[test]
    fn each_scheme_goes_through_its_own_proxy() {
        let p = Proxies {
            https: Some("http://user:secret@proxy.example:3128".into()),
            http: None,
            no_proxy: Some("localhost, .internal".into()),
        };
        let at = |u: &str| url::Url::parse(u).unwrap();
        let got = proxy_for(&p, &at("https://github.com/x")).unwrap().unwrap();
        assert_eq!((got.host(), got.port()), ("proxy.example", 3128));
        assert_eq!(got.password(), Some("secret"));
        let uri = |u: &str| u.parse::<ureq::http::Uri>().unwrap();
        assert!(got.is_no_proxy(&uri("https://localhost/x")));
        assert!(got.is_no_proxy(&uri("https://pypi.internal/x")));
        assert!(!got.is_no_proxy(&uri("https://github.com/x")));
        assert!(proxy_for(&p, &at("http://127.0.0.1/x")).unwrap().is_none());
        assert!(proxy_for(&Proxies::default(), &at("https://x/y"))
            .unwrap()
            .is_none());
        let bad = Proxies {
            https: Some("gopher://user:secret@proxy:1".into()),
            ..Proxies::default()
        };
        let e = proxy_for(&bad, &at("https://x/y")).unwrap_err().to_string();
        assert!(
            e.contains("HTTPS_PROXY") && e.contains("gopher://***@proxy:1"),
            "{e}"
        );
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn only_http_and_https_are_asked_for() {
        for u in ["file:///etc/passwd", "ftp://x/y", "not a url"] {
            let e = get(u, None, None).err().unwrap().to_string();
            assert!(e.contains(u) && e.contains("only those"), "{e}");
        }
    }
}
