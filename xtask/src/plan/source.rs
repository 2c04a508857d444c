//! Where the source comes from: the recipe's pinned archive, a local copy of
//! it, another local archive or a local directory.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hex;
use crate::recipe::{Recipe, Release};

#[derive(Debug, Clone)]
pub enum SourceChoice {
    /// The recipe's first source, fetched into the cache.
    Pinned,
    /// `--source PATH` naming an archive, with its sha256 (computed by the caller).
    Local { path: PathBuf, sha256: Sha256Hex },
    /// `--source PATH` naming a directory, with the content hash of its tree
    /// ([`crate::provision::tree::hash`], `Scope::Source`), computed by the caller.
    LocalDir {
        path: PathBuf,
        tree_sha256: Sha256Hex,
    },
}

/// What kind of source a plan builds: a recipe's pinned `sdist` or `tarball`,
/// or a `local` archive or directory. Serialised as those words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Sdist,
    Tarball,
    Local,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Sdist => "sdist",
            SourceKind::Tarball => "tarball",
            SourceKind::Local => "local",
        }
    }
}

impl From<crate::recipe::SourceKind> for SourceKind {
    fn from(k: crate::recipe::SourceKind) -> Self {
        match k {
            crate::recipe::SourceKind::Sdist => SourceKind::Sdist,
            crate::recipe::SourceKind::Tarball => SourceKind::Tarball,
        }
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SourceKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [SourceKind::Sdist, SourceKind::Tarball, SourceKind::Local]
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("`{s}` is not a source kind: expected sdist, tarball or local"))
    }
}

serde_as_string!(SourceKind);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlannedSource {
    pub kind: SourceKind,
    pub location: String,
    /// Absent for a local directory: then the build is not pinned.
    pub sha256: Option<Sha256Hex>,
    /// A local directory's content hash (`crate::provision::tree`, leaving out `.git`, `__pycache__`
    /// and CMake build dirs): an edited tree is another source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_sha256: Option<Sha256Hex>,
    /// Leading directory stripped from the archive.
    pub strip: String,
    /// Where the archive's tree goes in the source (`vendor/llama.cpp`: an upstream llama.cpp
    /// tarball, built by a recipe whose source vendors it there); none: it is the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under: Option<String>,
    /// The CMake project inside the unpacked tree.
    pub project_dir: String,
    /// Changes applied to the unpacked tree before CMake runs (the recipe's, then the release's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<crate::recipe::Patch>,
    /// The recipe's patches the check left out: already upstream, or optional and not
    /// fitting this source (with what that costs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_patches: Vec<crate::recipe::SkippedPatch>,
    /// Where the sha256 came from, where the recipe does not pin it: the package index's
    /// page of the project, or a manifest. Absent: the recipe's pin (or a local source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_from: Option<String>,
    /// How the release of a local source is known: `PKG-INFO` (read from it), or `given`
    /// (`--version`, where the source names none). Absent for a pinned source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_from: Option<String>,
    /// Another tree in place of the one this source vendors (`--llama-cpp`): an upstream
    /// build's tarball or a local tree, put at its `under` (the vendored tree removed
    /// first), before the patches. Absent: the source's own tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<Box<PlannedSource>>,
}

impl PlannedSource {
    /// Drops where a local source (and a local `--llama-cpp` tree) lies on this machine:
    /// what [`crate::plan::Plan::hash`] leaves out.
    pub fn unlocate(&mut self) {
        if self.kind == SourceKind::Local {
            self.location.clear();
        }
        if let Some(o) = &mut self.overlay {
            o.unlocate();
        }
    }
}

/// `--llama-cpp`, resolved before the plan: the tree, the upstream build it is (none for a
/// local tree, which the tool cannot name), and its date (a second after its newest entry).
#[derive(Debug, Clone)]
pub struct Overlay {
    pub source: PlannedSource,
    pub upstream: Option<crate::recipe::Upstream>,
    pub date: u64,
}

impl Overlay {
    /// Its part of the wheel's local version: `b11541` for an upstream build, `llamacpp`
    /// for a local tree (what it is, the manifest says: its path and content hash).
    pub fn label(&self) -> String {
        match &self.upstream {
            Some(u) => format!("b{}", u.build),
            None => "llamacpp".to_string(),
        }
    }
}

/// The upstream build a plan's source is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum PlannedUpstream {
    /// The recipe's `[release.upstream]`: repository, commit and build number.
    Build(crate::recipe::Upstream),
    /// Plans made before it was typed hold a line of text
    /// (`ggml-org/llama.cpp@0c1e57098 (vendored in llama-cpp-python 0.3.36)`): read back
    /// as written, so their hash holds.
    Text(String),
}

impl fmt::Display for PlannedUpstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlannedUpstream::Build(u) => write!(f, "{}@{}, build {}", u.repo, u.commit, u.build),
            PlannedUpstream::Text(t) => f.write_str(t),
        }
    }
}

/// The recipe's upstream build for the source the plan builds: none for a local source
/// (a tree or an archive other than the pinned one), whose commit the tool cannot know.
pub fn upstream<'a>(
    release: &'a Release,
    source: &PlannedSource,
) -> Option<&'a crate::recipe::Upstream> {
    match source.kind {
        SourceKind::Local => None,
        SourceKind::Sdist | SourceKind::Tarball => release.upstream.as_ref(),
    }
}

/// A pinned source as the plan records it.
fn pinned_source(s: &crate::recipe::Source, release: &Release, project_dir: &str) -> PlannedSource {
    PlannedSource {
        kind: s.kind.into(),
        location: s.url.clone(),
        sha256: Some(s.sha256.clone()),
        tree_sha256: None,
        strip: s.strip.clone(),
        under: s.under.clone(),
        project_dir: project_dir.to_string(),
        patches: vec![],
        skipped_patches: vec![],
        overlay: None,
        hash_from: release.pinned_by.hash_from(),
        version_from: None,
    }
}

/// What the pipeline read of the source before planning: the text of every file the
/// patches change (for the patch check), and a local source's leading dir and how its
/// release is known.
#[derive(Debug, Clone, Default)]
pub struct SourceFacts {
    /// Each patched file's text, by its path in the source; `None`: the source was not at
    /// hand (`plan` before a download), and the patches are planned unchecked.
    pub files: Option<std::collections::BTreeMap<String, String>>,
    /// A local archive's leading dir, read from it.
    pub strip: Option<String>,
    /// `PKG-INFO` or `given`, for a local source ([`PlannedSource::version_from`]).
    pub version_from: Option<String>,
}

/// The source the plan builds, from the user's choice, with the patches for `target`,
/// checked against the source's files where they were read (then with each patch's
/// verdict, `name: applies`).
pub fn planned(
    recipe: &Recipe,
    release: &Release,
    choice: &SourceChoice,
    facts: &SourceFacts,
    target: crate::platform::Target,
) -> Result<(PlannedSource, Option<Vec<String>>), crate::recipe::check::PatchDoesNotFit> {
    let patches: Vec<crate::recipe::Patch> = recipe
        .patches
        .iter()
        .chain(&release.patches)
        .filter(|p| p.targets.is_empty() || p.targets.contains(&target))
        .cloned()
        .collect();
    let (patches, skipped_patches, verdicts) = match &facts.files {
        Some(files) => {
            let checked = crate::recipe::check(&patches, files)?;
            let verdicts = checked
                .verdicts
                .iter()
                .map(|(name, fit)| format!("{name}: {fit}"))
                .collect();
            (checked.applied, checked.skipped, Some(verdicts))
        }
        None => (patches, vec![], None),
    };
    Ok((
        PlannedSource {
            patches,
            skipped_patches,
            ..unpatched(recipe, release, choice, facts)
        },
        verdicts,
    ))
}

fn unpatched(
    recipe: &Recipe,
    release: &Release,
    choice: &SourceChoice,
    facts: &SourceFacts,
) -> PlannedSource {
    let pinned = &release.sources[0];
    let local = |location: String, sha256, tree_sha256, strip: String| PlannedSource {
        kind: SourceKind::Local,
        location,
        sha256,
        tree_sha256,
        strip,
        under: None,
        project_dir: recipe.cmake.project_dir.clone(),
        patches: vec![],
        skipped_patches: vec![],
        hash_from: None,
        version_from: facts.version_from.clone(),
        overlay: None,
    };
    match choice {
        SourceChoice::Pinned => pinned_source(pinned, release, &recipe.cmake.project_dir),
        SourceChoice::Local { path, sha256 } => {
            match release.sources.iter().find(|s| &s.sha256 == sha256) {
                // A local copy of a pinned archive is that source: the same plan as fetching it,
                // so an offline build gives the same artifact.
                Some(s) if release.pinned_by != crate::recipe::PinnedBy::Local => {
                    pinned_source(s, release, &recipe.cmake.project_dir)
                }
                // Any other archive is recorded as local, by path and sha256, with the
                // leading dir it has.
                _ => local(
                    path.display().to_string(),
                    Some(sha256.clone()),
                    None,
                    facts.strip.clone().unwrap_or_else(|| pinned.strip.clone()),
                ),
            }
        }
        // A directory: by path and content, not pinned.
        SourceChoice::LocalDir { path, tree_sha256 } => local(
            path.display().to_string(),
            None,
            Some(tree_sha256.clone()),
            String::new(),
        ),
    }
}
