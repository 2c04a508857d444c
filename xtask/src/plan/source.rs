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
    /// The CMake project inside the unpacked tree.
    pub project_dir: String,
    /// Changes applied to the unpacked tree before CMake runs (the recipe's, then the release's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<crate::recipe::Patch>,
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
fn pinned_source(s: &crate::recipe::Source, project_dir: &str) -> PlannedSource {
    PlannedSource {
        kind: s.kind.into(),
        location: s.url.clone(),
        sha256: Some(s.sha256.clone()),
        tree_sha256: None,
        strip: s.strip.clone(),
        project_dir: project_dir.to_string(),
        patches: vec![],
    }
}

/// The source the plan builds, from the user's choice, with the patches for `target`.
pub fn planned(
    recipe: &Recipe,
    release: &Release,
    choice: &SourceChoice,
    target: crate::platform::Target,
) -> PlannedSource {
    let patches: Vec<crate::recipe::Patch> = recipe
        .patches
        .iter()
        .chain(&release.patches)
        .filter(|p| p.targets.is_empty() || p.targets.contains(&target))
        .cloned()
        .collect();
    PlannedSource {
        patches,
        ..unpatched(recipe, release, choice)
    }
}

fn unpatched(recipe: &Recipe, release: &Release, choice: &SourceChoice) -> PlannedSource {
    let pinned = &release.sources[0];
    match choice {
        SourceChoice::Pinned => pinned_source(pinned, &recipe.cmake.project_dir),
        SourceChoice::Local { path, sha256 } => {
            match release.sources.iter().find(|s| &s.sha256 == sha256) {
                // A local copy of a pinned archive is that source: the same plan as fetching it,
                // so an offline build gives the same artifact.
                Some(s) => pinned_source(s, &recipe.cmake.project_dir),
                // Any other archive is recorded as local, by path and sha256.
                None => PlannedSource {
                    kind: SourceKind::Local,
                    location: path.display().to_string(),
                    sha256: Some(sha256.clone()),
                    tree_sha256: None,
                    strip: pinned.strip.clone(),
                    project_dir: recipe.cmake.project_dir.clone(),
                    patches: vec![],
                },
            }
        }
        // A directory: by path and content, not pinned.
        SourceChoice::LocalDir { path, tree_sha256 } => PlannedSource {
            kind: SourceKind::Local,
            location: path.display().to_string(),
            sha256: None,
            tree_sha256: Some(tree_sha256.clone()),
            strip: String::new(),
            project_dir: recipe.cmake.project_dir.clone(),
            patches: vec![],
        },
    }
}
