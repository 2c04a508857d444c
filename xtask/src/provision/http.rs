//! HTTP(S) GETs: every download, the package index's page and a manifest given by URL.
//!
//! Redirects are followed here, not by ureq: each hop must be http or https (a redirect
//! to `file://` or anything else is refused, naming both URLs), at most [`MAX_REDIRECTS`]
//! of them. A GET has a deadline: [`ALLOWANCE`] plus its size at [`MIN_RATE`], the size
//! being what the server says (`Content-Length`, or the caller's own limit where that is
//! smaller); without one, the body must keep an average of [`MIN_RATE`] after the
//! allowance. A read that waits [`STALL`] for a byte ends it too.

use std::io::Read;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};

/// The most redirects one GET follows.
pub const MAX_REDIRECTS: usize = 5;
/// The slowest average a GET may keep (bytes a second): 50 kB/s.
pub const MIN_RATE: u64 = 50_000;
/// The time a GET has on top of its size at [`MIN_RATE`].
pub const ALLOWANCE: Duration = Duration::from_secs(120);
/// The longest one read may wait for data.
pub const STALL: Duration = Duration::from_secs(60);
const CONNECT: Duration = Duration::from_secs(30);

/// A GET's answer (2xx), its body read through [`Read`] within the deadline.
pub struct Response {
    /// The URL asked for (before redirects), for messages.
    url: String,
    /// `Content-Length`, where the server gave one.
    pub len: Option<u64>,
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
    let start = Instant::now();
    let mut at = http_url(url)
        .ok_or_else(|| anyhow!("`{url}` is not an http or https URL: only those are downloaded"))?;
    let agent = agent();
    let mut hops = 0;
    loop {
        let mut req = agent.get(at.as_str());
        if let Some(a) = accept {
            req = req.header("Accept", a);
        }
        let resp = req.call().map_err(|e| anyhow!("{at}: {e}"))?;
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
        return Ok(Response {
            url: url.to_string(),
            len,
            reader: resp.into_body().into_reader(),
            start,
            budget: size.map(deadline),
            got: 0,
        });
    }
}

impl Response {
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
    fn only_http_and_https_are_asked_for() {
        for u in ["file:///etc/passwd", "ftp://x/y", "not a url"] {
            let e = get(u, None, None).err().unwrap().to_string();
            assert!(e.contains(u) && e.contains("only those"), "{e}");
        }
    }
}
