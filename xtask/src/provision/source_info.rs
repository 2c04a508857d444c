//! What a source says of itself, read before planning: its leading dir, the release it is
//! (PKG-INFO, pyproject.toml or `__version__`) and the text of the files the recipe's
//! patches change, for the patch check. Nothing is unpacked: an archive is streamed once,
//! a directory read file by file, regular files only, each at most [`MAX_FILE`] bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::versions::Version;

/// The largest file read: llama.cpp's largest patched file is under 1 MiB.
const MAX_FILE: u64 = 8 << 20;

/// Files that may say which release a source is, in the order they are believed.
const VERSION_FILES: [&str; 3] = ["PKG-INFO", "pyproject.toml", "llama_cpp/__init__.py"];

/// What a source says of itself.
#[derive(Debug, Clone, Default)]
pub struct SourceInfo {
    /// An archive's one leading dir (`llama_cpp_python-0.3.35`); none for a directory.
    pub top: Option<String>,
    /// The release it says it is, and the file that says so.
    pub version: Option<(Version, &'static str)>,
    /// Each wanted file's text, by its path in the source as the recipe names it.
    pub files: BTreeMap<String, String>,
    /// The newest entry's mtime (Unix seconds).
    pub newest: u64,
    /// The commit a `git archive` tarball was made from: its global pax header's `comment`
    /// (40 hex digits), as GitHub's tag tarballs carry it.
    pub commit: Option<String>,
}

/// The release a file says the source is: `Version:` in PKG-INFO, `version = "..."` in
/// pyproject.toml's `[project]`, `__version__ = "..."` in a package's `__init__.py`.
fn version_in(name: &str, text: &str) -> Option<Version> {
    let quoted = |line: &str, key: &str| {
        let rest = line
            .trim()
            .strip_prefix(key)?
            .trim_start()
            .strip_prefix('=')?
            .trim();
        let q = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        rest[1..].split(q).next()?.parse().ok()
    };
    match name {
        "PKG-INFO" => text
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix("Version:"))
            .and_then(|v| v.trim().parse().ok()),
        "pyproject.toml" => {
            let mut in_project = false;
            text.lines().find_map(|l| {
                let t = l.trim();
                if t.starts_with('[') {
                    in_project = t == "[project]";
                    return None;
                }
                in_project.then(|| quoted(t, "version")).flatten()
            })
        }
        _ => text.lines().find_map(|l| quoted(l, "__version__")),
    }
}

fn decide_version(found: &BTreeMap<&'static str, String>) -> Option<(Version, &'static str)> {
    VERSION_FILES
        .iter()
        .find_map(|n| found.get(n).and_then(|t| version_in(n, t)).map(|v| (v, *n)))
}

/// Reads a `.tar.gz` source: its one leading dir, its release and the `wanted` files
/// (paths below that dir). Entries outside one leading dir are refused.
pub fn of_archive(path: &Path, wanted: &BTreeSet<String>) -> Result<SourceInfo> {
    let f = fs_err::File::open(path)?;
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(f)));
    let mut info = SourceInfo::default();
    let mut found: BTreeMap<&'static str, String> = BTreeMap::new();
    let not = || format!("{} is not a .tar.gz source archive", path.display());
    for entry in ar.entries().with_context(not)? {
        let mut entry = entry.with_context(not)?;
        use tar::EntryType as T;
        let kind = entry.header().entry_type();
        if kind == T::XGlobalHeader {
            // Records `<length> <key>=<value>\n`; git archive's has `comment=<commit>`.
            let mut text = String::new();
            if entry.size() <= 4096 && entry.read_to_string(&mut text).is_ok() {
                info.commit = text.lines().find_map(|l| {
                    let (_, kv) = l.split_once(' ')?;
                    kv.strip_prefix("comment=").map(|c| c.trim().to_string())
                });
            }
            continue;
        }
        if matches!(kind, T::XHeader | T::GNULongName | T::GNULongLink) {
            continue;
        }
        let name = entry
            .path()
            .with_context(not)?
            .to_string_lossy()
            .into_owned();
        let name = name.trim_start_matches("./");
        let (top, rest) = name.split_once('/').unwrap_or((name, ""));
        match &info.top {
            None => info.top = Some(top.to_string()),
            Some(t) if t != top => bail!(
                "{} has entries under both `{t}/` and `{top}/`: a source archive has one leading dir",
                path.display()
            ),
            Some(_) => {}
        }
        info.newest = info.newest.max(entry.header().mtime().unwrap_or(0));
        if !matches!(kind, T::Regular | T::Continuous) || entry.size() > MAX_FILE {
            continue;
        }
        let version_file = VERSION_FILES.iter().find(|n| **n == rest);
        if !wanted.contains(rest) && version_file.is_none() {
            continue;
        }
        let mut text = String::new();
        if entry.read_to_string(&mut text).is_err() {
            continue;
        }
        if let Some(n) = version_file {
            found.insert(n, text.clone());
        }
        if wanted.contains(rest) {
            info.files.insert(rest.to_string(), text);
        }
    }
    if info.top.is_none() {
        bail!("{} is empty: not a source archive", path.display());
    }
    info.version = decide_version(&found);
    Ok(info)
}

/// Reads a source directory, which is the recipe's CMake project (`project_dir` in the
/// unpacked source): a wanted path outside it is not there.
pub fn of_dir(dir: &Path, project_dir: &str, wanted: &BTreeSet<String>) -> Result<SourceInfo> {
    let read = |rel: &str| -> Result<Option<String>> {
        let p = dir.join(rel);
        match fs_err::symlink_metadata(&p) {
            Ok(m) if m.is_file() && m.len() <= MAX_FILE => Ok(fs_err::read_to_string(&p).ok()),
            _ => Ok(None),
        }
    };
    let mut info = SourceInfo::default();
    for w in wanted {
        let inside = if project_dir == "." {
            Some(w.as_str())
        } else {
            w.strip_prefix(project_dir)
                .and_then(|r| r.strip_prefix('/'))
        };
        if let Some(text) = inside.map(read).transpose()?.flatten() {
            info.files.insert(w.clone(), text);
        }
    }
    let mut found = BTreeMap::new();
    for n in VERSION_FILES {
        if let Some(t) = read(n)? {
            found.insert(n, t);
        }
    }
    info.version = decide_version(&found);
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_is_read_from_pkg_info_then_pyproject_then_version() {
        assert_eq!(
            version_in(
                "PKG-INFO",
                "Metadata-Version: 2.1\nName: x\nVersion: 0.3.35\n\nVersion: 9\n"
            ),
            Some("0.3.35".parse().unwrap())
        );
        assert_eq!(
            version_in(
                "pyproject.toml",
                "[tool.x]\nversion = \"1\"\n[project]\nname = \"x\"\nversion = '0.3.20'\n"
            ),
            Some("0.3.20".parse().unwrap())
        );
        assert_eq!(
            version_in("pyproject.toml", "[project]\ndynamic = [\"version\"]\n"),
            None
        );
        assert_eq!(
            version_in(
                "llama_cpp/__init__.py",
                "from .llama_cpp import *\n\n__version__ = \"0.3.30\"\n"
            ),
            Some("0.3.30".parse().unwrap())
        );
        let mut found = BTreeMap::new();
        found.insert(
            "llama_cpp/__init__.py",
            "__version__ = \"0.3.30\"".to_string(),
        );
        found.insert("PKG-INFO", "Version: 0.3.31\n".to_string());
        assert_eq!(
            decide_version(&found),
            Some(("0.3.31".parse().unwrap(), "PKG-INFO"))
        );
    }

    fn tarball(dir: &Path, entries: &[(&str, &str)]) -> std::path::PathBuf {
        let path = dir.join("s.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            Default::default(),
        );
        let mut b = tar::Builder::new(gz);
        for (name, text) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(text.len() as u64);
            h.set_mode(0o644);
            h.set_mtime(100);
            h.set_cksum();
            b.append_data(&mut h, name, text.as_bytes()).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
        path
    }

    #[test]
    fn an_archive_gives_its_top_dir_release_and_wanted_files() {
        let d = tempfile::tempdir().unwrap();
        let t = tarball(
            d.path(),
            &[
                ("llama_cpp_python-0.3.35/PKG-INFO", "Version: 0.3.35\n"),
                ("llama_cpp_python-0.3.35/CMakeLists.txt", "project(x)\n"),
                ("llama_cpp_python-0.3.35/other.txt", "x"),
            ],
        );
        let wanted = ["CMakeLists.txt".to_string(), "gone.c".to_string()].into();
        let info = of_archive(&t, &wanted).unwrap();
        assert_eq!(info.top.as_deref(), Some("llama_cpp_python-0.3.35"));
        assert_eq!(info.version, Some(("0.3.35".parse().unwrap(), "PKG-INFO")));
        assert_eq!(info.files.keys().collect::<Vec<_>>(), ["CMakeLists.txt"]);
        assert_eq!(info.newest, 100);
        let two = tarball(d.path(), &[("a/PKG-INFO", "Version: 1\n"), ("b/x", "")]);
        let e = of_archive(&two, &wanted).unwrap_err().to_string();
        assert!(e.contains("both `a/` and `b/`"), "{e}");
    }

    #[test]
    fn a_git_archive_names_its_commit() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("t.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            Default::default(),
        );
        let mut b = tar::Builder::new(gz);
        let record = "52 comment=0123456789abcdef0123456789abcdef01234567\n";
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::XGlobalHeader);
        h.set_path("pax_global_header").unwrap();
        h.set_size(record.len() as u64);
        h.set_cksum();
        b.append(&h, record.as_bytes()).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(1);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "llama.cpp-b1/x", &b"x"[..]).unwrap();
        b.into_inner().unwrap().finish().unwrap();
        let info = of_archive(&path, &BTreeSet::new()).unwrap();
        assert_eq!(info.top.as_deref(), Some("llama.cpp-b1"));
        assert_eq!(
            info.commit.as_deref(),
            Some("0123456789abcdef0123456789abcdef01234567")
        );
    }

    #[test]
    fn a_dir_is_the_project_dir_of_the_source() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("ggml")).unwrap();
        std::fs::write(d.path().join("ggml/a.c"), "a").unwrap();
        std::fs::write(d.path().join("CMakeLists.txt"), "c").unwrap();
        let wanted = [
            "vendor/llama.cpp/ggml/a.c".to_string(),
            "CMakeLists.txt".to_string(),
        ]
        .into();
        let info = of_dir(d.path(), "vendor/llama.cpp", &wanted).unwrap();
        assert_eq!(
            info.files.keys().collect::<Vec<_>>(),
            ["vendor/llama.cpp/ggml/a.c"]
        );
        assert_eq!(info.version, None);
        let root = of_dir(d.path(), ".", &wanted).unwrap();
        assert_eq!(root.files.keys().collect::<Vec<_>>(), ["CMakeLists.txt"]);
    }
}
