//! A wheel of ours judged against the checkout's recipe and packager, not against what
//! its own manifest claims: a manifest is rewritten as easily as the wheel it describes.
//!
//! - The package dirs, the distribution and the extra requirements the embedded plan
//!   names must be the ones the recipe (`recipes/<plan.recipe>.toml`) and the CUDA
//!   release make: a plan that lists `<dist>.data` or `numpy` as a package dir would let
//!   the wheel install scripts, a `.pth` or another package's files.
//! - The `.dist-info` dir holds only what the packager writes there.
//! - WHEEL is what the packager writes for the file name, field for field.
//! - METADATA and `entry_points.txt` are rebuilt from the source's PKG-INFO and
//!   pyproject.toml, where the plan's source archive is in the cache (checked against
//!   its sha256 first), and compared byte for byte; else Name and Version are checked
//!   and a warning says what was not.
//!
//! Any wheel, ours or not: a console or GUI script named like `python*` or `pip*` is
//! refused ([`check_scripts`]): pip would put it in place of the venv's interpreter.

use super::*;
use anyhow::Context as _;

/// Where a wheel's claims are checked against: this checkout's recipes, and the cache
/// that may hold the sources the plans name.
#[derive(Debug, Clone, Copy)]
pub struct Checkout<'a> {
    pub recipes: &'a Path,
    pub cache: &'a Path,
    /// The unpacked source the artifact was just packaged from (a build's own check),
    /// read instead of the cached archive.
    pub source: Option<&'a Path>,
}

/// The most of PKG-INFO or pyproject.toml read from a source archive.
const SOURCE_FILE_MAX: u64 = 4 << 20;

/// What the packager writes into a wheel's `.dist-info` dir, besides `licenses/...`.
const DIST_INFO_FILES: &[&str] = &["METADATA", "WHEEL", "RECORD", "entry_points.txt"];

pub(super) fn check_wheel_against_recipe(
    m: &Manifest,
    wheel: &WheelFilename,
    dist_info: &str,
    files: &Files,
    co: &Checkout,
    r: &mut Report,
) {
    let crate::plan::Package::Wheel {
        project,
        distribution,
        packages,
        lib_dir,
        requires,
        ..
    } = &m.plan.package
    else {
        return r.problem("the manifest inside the wheel plans an archive, not a wheel");
    };
    let name = &m.plan.recipe;
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !name.starts_with('.');
    let recipe = match plain
        .then(|| crate::recipe::Recipe::find(co.recipes, name))
        .transpose()
    {
        Ok(Some(recipe)) => recipe,
        Ok(None) => {
            return r.problem(format!(
                "the manifest names the recipe {}, which is not a recipe name: which dirs, metadata and scripts the wheel may have cannot be judged",
                shown(name)
            ))
        }
        Err(e) => {
            return r.problem(format!(
                "the manifest's recipe {} cannot be read from this checkout ({e}): which dirs, metadata and scripts the wheel may have cannot be judged; verify it in a checkout of the tool that made it",
                shown(name)
            ))
        }
    };
    let Some(w) = &recipe.wheel else {
        return r.problem(format!(
            "the manifest says recipe {name} made this wheel, but that recipe makes no wheel"
        ));
    };
    let want_requires = m
        .plan
        .cuda
        .as_ref()
        .map(|c| crate::plan::cuda::runtime_requires(&c.release, c.runtime))
        .unwrap_or_default();
    let claims: [(&str, String, String); 5] = [
        ("project", project.clone(), w.project.clone()),
        (
            "distribution",
            distribution.clone(),
            crate::tags::normalize_distribution(&w.project),
        ),
        ("package dirs", packages.join(", "), w.packages.join(", ")),
        ("library dir", lib_dir.clone(), w.lib_dir.clone()),
        (
            "extra requirements",
            requires.join(", "),
            want_requires.join(", "),
        ),
    ];
    for (what, got, want) in claims {
        if got != want {
            r.problem(format!(
                "the manifest's plan gives the {what} as {}, but recipe {name} makes {}: the manifest was not made by this recipe (a wheel that names its own dirs or requirements could install files where pip puts scripts or other packages, or pull in another package)",
                shown(&got),
                shown(&want)
            ));
        }
    }
    for p in files.keys() {
        let Some(rest) = p.strip_prefix(&format!("{dist_info}/")) else {
            continue;
        };
        let known = DIST_INFO_FILES.contains(&rest)
            || rest == manifest::WHEEL_NAME
            || rest
                .strip_prefix("licenses/")
                .is_some_and(|l| !l.is_empty() && !l.contains('/'));
        if !known {
            r.problem(format!(
                "{}: the packager writes no such file into .dist-info",
                shown(p)
            ));
        }
    }
    check_wheel_fields(wheel, dist_info, files, r);
    let version = match &wheel.local {
        Some(l) => format!("{}+{l}", m.plan.version),
        None => m.plan.version.to_string(),
    };
    let text = |f: &str| {
        files
            .get(&format!("{dist_info}/{f}"))
            .and_then(|s| s.text.as_deref())
            .map(|t| String::from_utf8_lossy(t).into_owned())
    };
    let metadata = text("METADATA");
    let entry_points = text("entry_points.txt");
    match source_files(m, co) {
        Ok(Ok((pkg_info, pyproject))) => {
            match crate::package::wheel::metadata_from_pkg_info(&pkg_info, &version, &want_requires)
            {
                Ok(want) => same_text("METADATA", metadata.as_deref(), Some(&want), r),
                Err(e) => r.problem(format!("the source's PKG-INFO: {e}")),
            }
            let want = pyproject
                .as_deref()
                .map(crate::package::wheel::entry_points_from_pyproject)
                .transpose();
            match want {
                Ok(want) => same_text(
                    "entry_points.txt",
                    entry_points.as_deref(),
                    want.flatten().as_deref(),
                    r,
                ),
                Err(e) => r.problem(format!("the source's pyproject.toml: {e:#}")),
            }
        }
        Ok(Err(why)) => {
            check_name_and_version(metadata.as_deref(), w, &version, r);
            r.warnings.push(format!(
                "METADATA's requirements and entry_points.txt were not rebuilt from the source: {why}"
            ));
        }
        Err(e) => r.problem(format!("{e:#}")),
    }
}

/// WHEEL as the packager writes it for this file name: every field but the Generator's
/// version (another release of this tool wrote it) and the tags (the generic checks hold
/// them to the file name).
fn check_wheel_fields(wheel: &WheelFilename, dist_info: &str, files: &Files, r: &mut Report) {
    let path = format!("{dist_info}/WHEEL");
    let Some(got) = files.get(&path).and_then(|s| s.text.as_deref()) else {
        return; // missing or too big: said by the generic checks
    };
    let got = String::from_utf8_lossy(got);
    let want = crate::package::wheel::wheel_file(wheel);
    // Tag lines are compared with the file name by the checks of any wheel.
    let generic = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("Tag:"))
            .map(|l| match l.strip_prefix("Generator: llama-forge ") {
                Some(_) => "Generator: llama-forge".to_string(),
                None => l.to_string(),
            })
            .collect()
    };
    let (g, w) = (generic(&got), generic(&want));
    if g != w {
        let line = g
            .iter()
            .zip(&w)
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("{} where the packager writes {b}", shown(a)))
            .unwrap_or_else(|| format!("{} lines where the packager writes {}", g.len(), w.len()));
        r.problem(format!(
            "{path} is not what the packager writes for {wheel}: {line}"
        ));
    }
}

/// A file of the `.dist-info` dir against the one the packager makes from the source.
fn same_text(what: &str, got: Option<&str>, want: Option<&str>, r: &mut Report) {
    match (got, want) {
        (None, None) => {}
        (Some(_), None) => r.problem(format!(
            "{what} is in the wheel, but the source gives none: the packager wrote no such file"
        )),
        (None, Some(_)) => r.problem(format!(
            "{what} is missing, but the packager makes one from the source"
        )),
        (Some(g), Some(w)) if g == w => {}
        (Some(g), Some(w)) => {
            let (n, a, b) = g
                .lines()
                .zip(w.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b)
                .map(|(i, (a, b))| (i + 1, a.to_string(), b.to_string()))
                .unwrap_or_else(|| {
                    let n = g.lines().count().min(w.lines().count()) + 1;
                    let at = |t: &str| t.lines().nth(n - 1).unwrap_or("(no line)").to_string();
                    (n, at(g), at(w))
                });
            r.problem(format!(
                "{what} is not what the packager makes from the source: line {n} is {} where it would be {}",
                shown(&a),
                shown(&b)
            ));
        }
    }
}

/// Without the source: METADATA's Name and Version at least.
fn check_name_and_version(
    metadata: Option<&str>,
    w: &crate::recipe::WheelSpec,
    version: &str,
    r: &mut Report,
) {
    let Some(text) = metadata else {
        return r.problem("METADATA is missing: pip installs no wheel without it");
    };
    let header = |k: &str| {
        text.split("\n\n")
            .next()
            .unwrap_or("")
            .lines()
            .find_map(|l| l.strip_prefix(k).map(str::trim))
    };
    let name_ok = header("Name:").is_some_and(|n| {
        crate::tags::normalize_distribution(n) == crate::tags::normalize_distribution(&w.project)
    });
    if !name_ok {
        r.problem(format!(
            "METADATA's Name is {}, not {}, the recipe's project",
            shown(header("Name:").unwrap_or("missing")),
            w.project
        ));
    }
    if header("Version:") != Some(version) {
        r.problem(format!(
            "METADATA's Version is {}, not {version}, the plan's version and label",
            shown(header("Version:").unwrap_or("missing"))
        ));
    }
}

/// PKG-INFO and pyproject.toml (if any) of the plan's source, read only once its hash is
/// the plan's: the build's own unpacked tree; the cached download (a cached file with
/// another sha256 is an error); a local archive or dir at the path the plan names, where
/// it is still there with the plan's sha256 or tree hash. `Err(why)` inside: it could not
/// be read, and why, for the warning.
fn source_files(m: &Manifest, co: &Checkout) -> Result<Result<(String, Option<String>), String>> {
    if let Some(dir) = co.source {
        return Ok(Ok(read_dir_files(dir)?));
    }
    let s = &m.plan.source;
    if s.under.is_some() {
        return Ok(Err(format!(
            "the source {} goes under {} of another tree",
            s.location,
            s.under.as_deref().unwrap_or("")
        )));
    }
    let local = s.kind == crate::plan::SourceKind::Local;
    match (&s.sha256, &s.tree_sha256) {
        (Some(sha), _) => {
            let path = if local {
                PathBuf::from(&s.location)
            } else {
                crate::provision::fetch::cache_path(co.cache, &s.location, sha)
            };
            if !fs_err::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                return Ok(Err(if local {
                    format!("the local archive {} is not there", s.location)
                } else {
                    format!(
                        "{} is not in the cache ({}); `cargo xtask plan {} --version {} --check-patches` fetches it",
                        s.location,
                        co.cache.display(),
                        m.plan.recipe,
                        m.plan.version
                    )
                }));
            }
            let got = crate::digest::sha256_file(&path)?;
            if &got != sha {
                if local {
                    return Ok(Err(format!(
                        "the local archive {} has changed since (sha256 {got}, the plan's {sha})",
                        s.location
                    )));
                }
                anyhow::bail!(
                    "{} in the cache has sha256 {got}, not the plan's {sha}: remove it (the next build downloads it again)",
                    path.display()
                );
            }
            Ok(Ok(read_archive_files(&path, &s.strip)?))
        }
        (None, Some(tree)) => {
            let dir = PathBuf::from(&s.location);
            if !fs_err::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                return Ok(Err(format!(
                    "the local source dir {} is not there",
                    s.location
                )));
            }
            let got = crate::provision::tree::digest(&dir, crate::provision::tree::Scope::Source)?;
            if &got != tree {
                return Ok(Err(format!(
                    "the local source dir {} has changed since (tree sha256 {got}, the plan's {tree})",
                    s.location
                )));
            }
            Ok(Ok(read_dir_files(&dir)?))
        }
        (None, None) => Ok(Err(format!(
            "the source {} is pinned by no hash",
            s.location
        ))),
    }
}

fn read_dir_files(dir: &Path) -> Result<(String, Option<String>)> {
    let read = |name: &str| -> Result<Option<String>> {
        let p = dir.join(name);
        match fs_err::symlink_metadata(&p) {
            Ok(m) if m.is_file() && m.len() <= SOURCE_FILE_MAX => {
                Ok(Some(fs_err::read_to_string(&p)?))
            }
            Ok(_) => anyhow::bail!(
                "{} is not a regular file of at most {} MiB",
                p.display(),
                SOURCE_FILE_MAX >> 20
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    };
    let pkg_info = read("PKG-INFO")?
        .with_context(|| format!("{} has no PKG-INFO: is it an sdist?", dir.display()))?;
    Ok((pkg_info, read("pyproject.toml")?))
}

fn read_archive_files(path: &Path, strip: &str) -> Result<(String, Option<String>)> {
    let file = fs_err::File::open(path)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let top = strip.trim_end_matches('/');
    let (mut pkg_info, mut pyproject) = (None, None);
    for e in archive.entries()? {
        let mut e = e?;
        let name = e.path()?.to_string_lossy().replace('\\', "/");
        let slot = match name.strip_prefix(&format!("{top}/")) {
            Some("PKG-INFO") => &mut pkg_info,
            Some("pyproject.toml") => &mut pyproject,
            _ => continue,
        };
        if e.header().entry_type() != tar::EntryType::Regular || e.size() > SOURCE_FILE_MAX {
            anyhow::bail!(
                "{name} in {} is not a regular file of at most {} MiB",
                path.display(),
                SOURCE_FILE_MAX >> 20
            );
        }
        let mut text = String::new();
        e.read_to_string(&mut text)?;
        *slot = Some(text);
        if pkg_info.is_some() && pyproject.is_some() {
            break;
        }
    }
    let pkg_info = pkg_info.with_context(|| {
        format!(
            "{} holds no {top}/PKG-INFO: is it an sdist?",
            path.display()
        )
    })?;
    Ok((pkg_info, pyproject))
}

/// Any wheel: no console or GUI script named like the interpreter or pip. pip writes each
/// into the venv's `bin/` (`Scripts\` on Windows), over what is there.
pub(super) fn check_scripts(dist_info: &str, files: &Files, r: &mut Report) {
    // A `<dist>.data/scripts/` file is a script pip installs into the venv's bin/ too.
    for name in files.keys() {
        let Some((data, script)) = name.split_once(".data/scripts/") else {
            continue;
        };
        if data.contains('/') || script.contains('/') {
            continue;
        }
        if let Some(what) = shadows(script) {
            r.problem(format!(
                "{}: a script that would replace the environment's {what} when pip installs the wheel: refused",
                shown(name),
            ));
        }
    }
    let path = format!("{dist_info}/entry_points.txt");
    let Some(text) = files.get(&path).and_then(|s| s.text.as_deref()) else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let mut group = String::new();
    // Read as pip reads it (importlib.metadata): lines split as Python's str.splitlines
    // splits them, a group any line that starts with `[` and ends with `]`, its name
    // with every bracket stripped.
    let breaks = [
        '\n', '\r', '\u{0b}', '\u{0c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}',
        '\u{2029}',
    ];
    for line in text.split(breaks) {
        let line = line.trim();
        if line.starts_with('[') && line.ends_with(']') {
            group = line.trim_matches(['[', ']']).trim().to_string();
            continue;
        }
        if group != "console_scripts" && group != "gui_scripts" {
            continue;
        }
        let Some((name, _)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if let Some(what) = shadows(name) {
            r.problem(format!(
                "{path}: the script {} would replace the environment's {what} when pip installs the wheel: refused",
                shown(name),
            ));
        }
    }
}

/// What a script of this name would replace in a venv: `python`, `python3`,
/// `python3.12`, `pythonw`, `pip`, `pip3`, `pip3.12` (any case, `.exe` too).
fn shadows(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    let base = lower.strip_suffix(".exe").unwrap_or(&lower);
    let (what, rest) = if let Some(rest) = base.strip_prefix("python") {
        ("Python interpreter", rest.strip_suffix('w').unwrap_or(rest))
    } else if let Some(rest) = base.strip_prefix("pip") {
        ("pip", rest)
    } else {
        return None;
    };
    let version = match rest.split_once('.') {
        Some((major, minor)) => {
            !major.is_empty()
                && major.bytes().all(|b| b.is_ascii_digit())
                && !minor.is_empty()
                && minor.bytes().all(|b| b.is_ascii_digit())
        }
        None => rest.bytes().all(|b| b.is_ascii_digit()),
    };
    version.then_some(what)
}

#[cfg(test)]
mod tests {
    /// pip's reading of entry_points.txt (str.splitlines, brackets stripped) and the
    /// `.data/scripts/` dir: every form that would replace pip or python is refused.
    #[test]
    fn scripts_as_pip_reads_them() {
        let seen = |text: &str| super::Seen {
            size: text.len() as u64,
            digest: [0; 32],
            binary: None,
            text: Some(text.as_bytes().to_vec()),
        };
        for ep in [
            "[console_scripts]\npip = foo:main\n",
            "[[console_scripts]]\npip = foo:main\n",
            "[console_scripts]]\npip = foo:main\n",
            "[console_scripts]\rpip = foo:main\r",
            "[x]\u{0c}[console_scripts]\u{0c}pip = foo:main\n",
            "[x]\u{2028}[console_scripts]\u{2028}pip = foo:main\n",
            "[x]\u{1c}[console_scripts]\u{1c}python3 = foo:main\n",
        ] {
            let mut files = super::Files::new();
            files.insert("foo-1.0.dist-info/entry_points.txt".into(), seen(ep));
            let mut r = super::Report::default();
            super::check_scripts("foo-1.0.dist-info", &files, &mut r);
            assert_eq!(r.problems.len(), 1, "{ep:?}: {:?}", r.problems);
        }
        let mut files = super::Files::new();
        files.insert("foo-1.0.data/scripts/pip".into(), seen("#!python\n"));
        files.insert("foo-1.0.data/scripts/foo-cli".into(), seen("#!python\n"));
        let mut r = super::Report::default();
        super::check_scripts("foo-1.0.dist-info", &files, &mut r);
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert!(r.problems[0].contains("scripts/pip"), "{:?}", r.problems);
    }

    #[test]
    fn scripts_that_shadow_python_or_pip() {
        for n in [
            "pip",
            "PIP3",
            "pip3.12",
            "python",
            "python3",
            "python3.12",
            "pythonw",
            "pip.exe",
            "Python3.exe",
        ] {
            assert!(super::shadows(n).is_some(), "{n}");
        }
        for n in [
            "pipx",
            "pip-compile",
            "pipenv",
            "python-dotenv",
            "llama-cpp",
            "py",
            "pip3.",
            "python3.x",
        ] {
            assert!(super::shadows(n).is_none(), "{n}");
        }
    }
}
