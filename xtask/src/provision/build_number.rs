//! llama.cpp's build number of a commit the tool has no clone of: `git rev-list --count`,
//! which is the number of commits GitHub's API lists from it. Asked one commit per page,
//! the answer's `Link` header names the last page, whose number is that count. A commit's
//! count never changes, so each answer is kept in the cache and asked once.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The largest answer read: one commit's JSON is a few kB.
const MAX_ANSWER: u64 = 1 << 20;

/// Where the answer for `url` is kept: beside the first downloads' hashes
/// ([`crate::provision::fetch::fetch_first`]), by the URL's sha256.
fn record(cache: &Path, url: &str) -> PathBuf {
    cache.join("downloads").join("by-url").join(format!(
        "{}.count",
        crate::digest::sha256_bytes(url.as_bytes()).as_str()
    ))
}

/// The build number `url` (a commit list, one per page) gives: from the cache, else asked.
pub fn build_number(cache: &Path, url: &str) -> Result<u32> {
    let kept = record(cache, url);
    if let Ok(text) = fs_err::read_to_string(&kept) {
        if let Ok(n) = text.trim().parse::<u32>() {
            if n > 0 {
                return Ok(n);
            }
        }
    }
    crate::provision::fetch::refuse_offline(&format!(
        "{url} is not asked (--offline), and only it gives the build number"
    ))?;
    let mut resp =
        crate::provision::http::get(url, Some("application/vnd.github+json"), Some(MAX_ANSWER))?;
    let link = resp.header("Link").map(str::to_string);
    let mut data = Vec::new();
    (&mut resp)
        .take(MAX_ANSWER + 1)
        .read_to_end(&mut data)
        .with_context(|| format!("reading {url} broke off"))?;
    let n = count(link.as_deref(), &data).with_context(|| format!("{url}: no commit count"))?;
    let dir = kept.parent().expect("a record has a parent");
    fs_err::create_dir_all(dir)?;
    let mut rec = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut rec, format!("{n}\n").as_bytes())?;
    rec.persist(&kept)
        .with_context(|| format!("cannot write {}", kept.display()))?;
    Ok(n)
}

/// The upstream build `commit` of `v`'s repository is: its build number from `url`'s
/// answer, kept in the cache.
pub fn upstream_of(
    v: &crate::recipe::UnpinnedUpstream,
    api: &str,
    cache: &Path,
    commit: crate::recipe::GitCommit,
) -> Result<crate::recipe::Upstream> {
    let build = build_number(cache, &v.count_url(api, &commit))?;
    Ok(crate::recipe::Upstream {
        repo: v.repo.clone(),
        commit,
        build,
    })
}

/// The count an answer gives: its `Link` header's `rel="last"` page, else (one page) the
/// number of commits in the body, which must be one.
fn count(link: Option<&str>, body: &[u8]) -> Result<u32> {
    if let Some(link) = link {
        for part in link.split(',') {
            let Some((target, params)) = part.split_once(';') else {
                continue;
            };
            if !params.split(';').any(|p| p.trim() == "rel=\"last\"") {
                continue;
            }
            let target = target.trim().trim_start_matches('<').trim_end_matches('>');
            let query = target.split_once('?').map(|(_, q)| q).unwrap_or("");
            let page = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("page="))
                .and_then(|p| p.parse::<u32>().ok())
                .filter(|&p| p > 0);
            return page
                .with_context(|| format!("its Link header's last page has no number: {target}"));
        }
    }
    let list: Vec<serde_json::Value> =
        serde_json::from_slice(body).context("the answer is not a list of commits")?;
    match list.len() {
        1 => Ok(1),
        n => bail!("{n} commits on the one page of a list of one per page"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_page_is_the_count() {
        let link = r#"<https://api.github.com/repositories/612354784/commits?sha=e3a7&per_page=1&page=2>; rel="next", <https://api.github.com/repositories/612354784/commits?sha=e3a7&per_page=1&page=7391>; rel="last""#;
        assert_eq!(count(Some(link), b"[{}]").unwrap(), 7391);
        // A first commit has one page and no Link header.
        assert_eq!(count(None, b"[{\"sha\": \"x\"}]").unwrap(), 1);
        assert!(count(None, b"[]").is_err());
        assert!(count(Some(r#"<x?page=0>; rel="last""#), b"[]").is_err());
        assert!(count(None, b"{\"message\": \"Not Found\"}").is_err());
    }

    #[test]
    fn an_answer_is_kept_and_not_asked_again() {
        let dir = tempfile::tempdir().unwrap();
        let url = "http://127.0.0.1:9/repos/o/r/commits?sha=x&per_page=1";
        let kept = record(dir.path(), url);
        fs_err::create_dir_all(kept.parent().unwrap()).unwrap();
        fs_err::write(&kept, "6170\n").unwrap();
        // Nothing listens on port 9: the kept answer is used.
        assert_eq!(build_number(dir.path(), url).unwrap(), 6170);
    }
}
