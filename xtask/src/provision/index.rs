//! A project's releases on a Python package index, from its simple API's JSON page
//! (PEP 691, `Accept: application/vnd.pypi.simple.v1+json`): each sdist's URL, sha256 and
//! upload time (PEP 700), which a release the recipe does not pin is built from.

use std::io::Read;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::digest::Sha256Hex;
use crate::versions::Version;

/// The most a project page may hold: llama-cpp-python's is 85 kB.
const MAX_PAGE: u64 = 16 << 20;

/// One release's sdist on the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRelease {
    pub version: Version,
    pub url: String,
    pub sha256: Sha256Hex,
    /// The upload time, Unix seconds (whole, UTC).
    pub date: u64,
}

/// The project's page under the simple API root: `<index>/<normalized name>/` (PEP 503).
pub fn page_url(index: &str, project: &str) -> String {
    let mut name = String::new();
    for c in project.chars() {
        let c = c.to_ascii_lowercase();
        if "-_.".contains(c) {
            if !name.ends_with('-') {
                name.push('-');
            }
        } else {
            name.push(c);
        }
    }
    format!("{}/{name}/", index.trim_end_matches('/'))
}

#[derive(Deserialize)]
struct Page {
    files: Vec<File>,
}

#[derive(Deserialize)]
struct File {
    filename: String,
    url: String,
    hashes: std::collections::BTreeMap<String, String>,
    #[serde(rename = "upload-time")]
    upload_time: Option<String>,
    #[serde(default)]
    yanked: serde_json::Value,
}

/// The releases `page` (its JSON, fetched from `page_url`) offers as sdists of `project`,
/// newest first. A file without a sha256 or an upload time, a yanked one, and a version
/// that is not plain numbers (a pre-release) are left out.
pub fn parse(json: &[u8], page_url: &str, project: &str) -> Result<Vec<IndexRelease>> {
    let page: Page = serde_json::from_slice(json)
        .with_context(|| format!("{page_url} is not a PEP 691 project page (JSON with `files`)"))?;
    let base = url::Url::parse(page_url).with_context(|| format!("`{page_url}` is not a URL"))?;
    let prefix = format!("{}-", project.replace(['-', '.'], "_").to_ascii_lowercase());
    let mut out = Vec::new();
    for f in page.files {
        let lower = f.filename.to_ascii_lowercase();
        let Some(version) = lower
            .strip_prefix(&prefix)
            .and_then(|v| v.strip_suffix(".tar.gz"))
            .and_then(|v| v.parse::<Version>().ok())
        else {
            continue;
        };
        let yanked = !matches!(
            f.yanked,
            serde_json::Value::Null | serde_json::Value::Bool(false)
        );
        let (Some(sha), Some(time)) = (f.hashes.get("sha256"), f.upload_time.as_deref()) else {
            continue;
        };
        if yanked {
            continue;
        }
        let sha256: Sha256Hex = sha
            .parse()
            .map_err(|e| anyhow::anyhow!("{page_url}: {}: {e}", f.filename))?;
        let date = crate::recipe::parse_utc(time).with_context(|| {
            format!(
                "{page_url}: {}: upload-time `{time}` is not an RFC 3339 UTC time",
                f.filename
            )
        })?;
        let url = base
            .join(&f.url)
            .with_context(|| format!("{page_url}: {}: `{}` is not a URL", f.filename, f.url))?;
        if !matches!(url.scheme(), "https" | "http") {
            bail!(
                "{page_url}: {} is served from `{url}`: only http and https URLs are downloaded",
                f.filename
            );
        }
        let mut url = url;
        url.set_fragment(None);
        out.push(IndexRelease {
            version,
            url: url.to_string(),
            sha256,
            date,
        });
    }
    out.sort_by(|a, b| b.version.cmp(&a.version));
    out.dedup_by(|a, b| a.version == b.version);
    Ok(out)
}

/// Fetches the project's page from the index (at most [`MAX_PAGE`] bytes) and parses it.
pub fn releases(index: &str, project: &str) -> Result<Vec<IndexRelease>> {
    let page = page_url(index, project);
    crate::provision::fetch::refuse_offline(&format!(
        "the package index's page of {project} ({page}) is not read, and only it says what a release the recipe does not pin is (--version latest, or a version not pinned): give a pinned --version"
    ))?;
    let resp = crate::provision::http::get(
        &page,
        Some("application/vnd.pypi.simple.v1+json"),
        Some(MAX_PAGE),
    )
    .with_context(|| {
        format!("cannot read {page}, the package index's page of {project}: check the network, or set LLAMA_FORGE_INDEX_URL to a reachable index (a mirror's simple API); a release the recipe pins needs no index")
    })?;
    let mut data = Vec::new();
    resp.take(MAX_PAGE + 1)
        .read_to_end(&mut data)
        .with_context(|| format!("reading {page} broke off"))?;
    if data.len() as u64 > MAX_PAGE {
        bail!(
            "{page} serves more than {} MiB: not a project page",
            MAX_PAGE >> 20
        );
    }
    parse(&data, &page, project)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"{"meta": {"api-version": "1.1"}, "name": "llama-cpp-python", "files": [
      {"filename": "llama_cpp_python-0.3.35.tar.gz", "hashes": {"sha256": "1139dbb54509074b70893fab8554e3b079aa9f4d312058ce4018ef0019e3de12"},
       "upload-time": "2026-08-17T09:41:34.939236Z", "url": "https://files.pythonhosted.org/packages/1a/71/x/llama_cpp_python-0.3.35.tar.gz#sha256=1139", "yanked": false},
      {"filename": "llama_cpp_python-0.3.36.tar.gz", "hashes": {"sha256": "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"},
       "upload-time": "2026-10-01T05:48:01.345495Z", "url": "../../files/llama_cpp_python-0.3.36.tar.gz"},
      {"filename": "llama_cpp_python-0.3.37rc1.tar.gz", "hashes": {"sha256": "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"},
       "upload-time": "2026-10-02T05:48:01Z", "url": "x.tar.gz"},
      {"filename": "llama_cpp_python-0.3.34.tar.gz", "hashes": {"sha256": "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"},
       "upload-time": "2026-07-12T04:33:41Z", "url": "y.tar.gz", "yanked": "broken"},
      {"filename": "llama_cpp_python-0.3.33-py3-none-any.whl", "hashes": {"sha256": "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"},
       "upload-time": "2026-07-12T04:33:41Z", "url": "z.whl"}
    ]}"#;

    #[test]
    fn sdists_newest_first_with_urls_joined_and_times_in_seconds() {
        let page = page_url("https://pypi.org/simple/", "llama-cpp-python");
        assert_eq!(page, "https://pypi.org/simple/llama-cpp-python/");
        assert_eq!(
            page_url("http://127.0.0.1:8/simple", "Llama_Cpp.Python"),
            "http://127.0.0.1:8/simple/llama-cpp-python/"
        );
        let got = parse(PAGE.as_bytes(), &page, "llama-cpp-python").unwrap();
        let v: Vec<String> = got.iter().map(|r| r.version.to_string()).collect();
        assert_eq!(v, ["0.3.36", "0.3.35"]);
        assert_eq!(
            got[0].url,
            "https://pypi.org/files/llama_cpp_python-0.3.36.tar.gz"
        );
        assert_eq!(got[0].date, 1790833681);
        assert_eq!(
            got[1].url,
            "https://files.pythonhosted.org/packages/1a/71/x/llama_cpp_python-0.3.35.tar.gz"
        );
        assert_eq!(got[1].date, 1786959694);
    }

    #[test]
    fn a_page_that_is_not_json_or_points_elsewhere_is_refused() {
        let page = "https://pypi.org/simple/llama-cpp-python/";
        let e = parse(b"<html>", page, "llama-cpp-python").unwrap_err();
        assert!(
            format!("{e:#}").contains("is not a PEP 691 project page"),
            "{e:#}"
        );
        let file = PAGE.replace("../../files/", "file:///etc/");
        let e = parse(file.as_bytes(), page, "llama-cpp-python").unwrap_err();
        assert!(e.to_string().contains("only http and https"), "{e}");
        let bad = PAGE.replace("1139dbb5", "zz39dbb5");
        assert!(parse(bad.as_bytes(), page, "llama-cpp-python").is_err());
    }
}
