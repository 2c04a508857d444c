//! Build-machine paths: none may be inside a shipped binary.

use super::*;

/// The absolute paths that must never be inside a shipped binary: the stable
/// build path every build compiles under (`/tmp/llama-forge/`), the local
/// source dir the manifest names, and `extra` (the caller's own build dirs).
/// Paths of fewer than two components (`/src`, `/build`: the targets of the
/// build's `-ffile-prefix-map`) are not searched for.
pub fn build_path_needles(m: &Manifest, extra: &[String]) -> Vec<String> {
    let mut out = vec![format!("{}/", crate::build::ALIAS_DIR)];
    let local = (m.plan.source.kind == crate::plan::SourceKind::Local)
        .then(|| m.plan.source.location.clone());
    for p in local.into_iter().chain(extra.iter().cloned()) {
        let p = p.trim_end_matches('/').to_string();
        let deep = Path::new(&p).is_absolute() && Path::new(&p).components().count() > 2;
        if deep && !out.iter().any(|n| p.starts_with(n.trim_end_matches('/'))) {
            out.push(p);
        }
    }
    out
}

/// Every ELF file is searched (its copy, a chunk at a time) for each needle; a
/// hit names the file and the whole path found (up to the next byte that cannot
/// be part of a path).
pub(super) fn check_build_paths(files: &Files, needles: &[String], r: &mut Report) -> Result<()> {
    let pattern = needles
        .iter()
        .map(|n| regex::escape(n))
        .collect::<Vec<_>>()
        .join("|");
    let re = regex::bytes::Regex::new(&format!("(?-u)(?:{pattern})[^\\x00-\\x20\\x7f-\\xff\"']*"))
        .expect("escaped literals");
    let longest = needles.iter().map(String::len).max().unwrap_or(1);
    for (p, seen) in files {
        let Some(copy) = seen.copy() else { continue };
        let (first, hits) = find_paths(fs_err::File::open(copy)?, &re, longest, 1 << 20)?;
        if let Some(first) = first {
            let tail = if hits > 1 {
                format!(" (and {} more)", hits - 1)
            } else {
                String::new()
            };
            r.problem(format!("{p}: contains the build path {first}{tail}: a build-machine path must not reach the artifact"));
        }
    }
    Ok(())
}

/// A path found longer than this is reported cut short there.
const LONGEST_PATH: usize = 4096;

/// The first match of `re` in `data`, and how many there are, reading `chunk`
/// bytes at a time: the last `longest - 1` bytes (the most of a needle that can
/// hang over a chunk's end) are searched again with the next chunk, and so is a
/// match that reaches the end, as the path may go on.
pub(super) fn find_paths(
    mut data: impl Read,
    re: &regex::bytes::Regex,
    longest: usize,
    chunk: usize,
) -> Result<(Option<String>, usize)> {
    let (mut first, mut hits) = (None, 0);
    let mut buf: Vec<u8> = Vec::with_capacity(chunk + longest + LONGEST_PATH);
    let mut read = vec![0u8; chunk];
    loop {
        let n = data.read(&mut read)?;
        let at_end = n == 0;
        buf.extend_from_slice(&read[..n]);
        let (mut pos, mut done) = (0, 0);
        loop {
            match re.find_at(&buf, pos) {
                Some(m) if m.end() == buf.len() && !at_end && m.len() < LONGEST_PATH => {
                    done = m.start();
                    break;
                }
                Some(m) => {
                    first.get_or_insert_with(|| String::from_utf8_lossy(m.as_bytes()).into_owned());
                    hits += 1;
                    (pos, done) = (m.end(), m.end());
                }
                None => {
                    done = done.max(buf.len().saturating_sub(longest - 1));
                    break;
                }
            }
        }
        if at_end {
            return Ok((first, hits));
        }
        buf.drain(..done);
    }
}
