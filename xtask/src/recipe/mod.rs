//! Recipes: one TOML file per package under `recipes/`, parsed into typed values.
//!
//! A recipe names its releases (newest first), the sources of each release with
//! pinned sha256, the CMake project inside the source, the defines the package
//! needs (each with its reason), and what goes into the artifact.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hex;
use crate::versions::Version;

pub mod check;
mod patches;
pub mod profile;
pub mod update;

pub use patches::{PatchEntry, SharedPatches};
pub use profile::{Feature, Profile};

#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    #[error("no recipe named `{name}` in {dir}: known recipes are {known}")]
    Unknown {
        name: String,
        dir: PathBuf,
        known: String,
    },
    #[error(
        "{dir} is not a recipe dir (it is not there): run the tool inside a llama-forge checkout (it is found from the current dir upwards, by its recipes/ and toolchains/), or point LLAMA_FORGE_ROOT at one"
    )]
    NoRecipes { dir: PathBuf },
    #[error("cannot read recipe {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("malformed recipe {path}: {message}")]
    Malformed { path: PathBuf, message: String },
    #[error("recipe `{recipe}` has no release `{version}`: pinned releases are {known}{unpinned}")]
    UnknownRelease {
        recipe: String,
        version: String,
        known: String,
        /// What else may be asked for, where the recipe takes unpinned releases.
        unpinned: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ArtifactKind {
    /// A Python wheel (`recipes/*.toml` has a `[wheel]` table).
    Wheel,
    /// A binary archive (`[archive]` table).
    Archive,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub name: String,
    pub summary: String,
    pub artifact: ArtifactKind,
    /// Releases, newest first: the first is the default.
    #[serde(rename = "release")]
    pub releases: Vec<Release>,
    pub cmake: CmakeSpec,
    pub wheel: Option<WheelSpec>,
    pub archive: Option<ArchiveSpec>,
    /// The profile file, relative to the recipe's dir (`profiles/ggml.toml`): ggml's build
    /// policy. Without one the plan sets none of it.
    #[serde(rename = "profile")]
    pub profile_file: Option<String>,
    /// [`Recipe::profile_file`], read.
    #[serde(skip)]
    pub profile: Option<Profile>,
    /// Where the patches taken by name (`use = "<name>"`) come from.
    pub shared_patches: Option<SharedPatches>,
    /// The `[[patch]]` entries as written (a patch, or a shared one by name).
    #[serde(default, rename = "patch")]
    pub patch_entries: Vec<PatchEntry>,
    /// Changes to every release's source, applied after unpacking (each recorded in the
    /// plan): [`Recipe::patch_entries`], shared ones resolved.
    #[serde(skip)]
    pub patches: Vec<Patch>,
    /// Releases the recipe does not pin: where they are published, and their patches.
    pub unpinned: Option<Unpinned>,
    /// llama.cpp's own builds by their tags (`--version b11541`): upstream's tarballs.
    pub upstream_builds: Option<UpstreamBuilds>,
    /// `[vendored]`: the source vendors llama.cpp, which `--llama-cpp` replaces.
    pub vendored: Option<Vendored>,
}

/// `[vendored]`: the llama.cpp tree the source vendors can be replaced (`--llama-cpp`):
/// upstream's builds are fetched as the named recipe's `[upstream_builds]` says, and put
/// where its `under` says.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vendored {
    /// The recipe whose `[upstream_builds]` fetches llama.cpp's builds (`llama.cpp`).
    pub builds_of: String,
}

/// `[upstream_builds]`: llama.cpp's release tags `b<build>`, from upstream's tag tarballs (a
/// `git archive`, whose pax header names the commit), placed where the recipe's source has
/// llama.cpp's tree, with the patches of a pin, each checked against the tree.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamBuilds {
    /// The repository, `owner/name` (`ggml-org/llama.cpp`).
    pub repo: String,
    /// The tag's tarball, `{build}` standing for the number
    /// (`https://github.com/ggml-org/llama.cpp/archive/refs/tags/b{build}.tar.gz`).
    pub url: String,
    /// The tarball's leading dir (`llama.cpp-b{build}`).
    pub strip: String,
    /// Where the tree goes in the source the recipe builds (`vendor/llama.cpp`).
    pub under: String,
    /// The pinned release whose patches a build takes, with their variants.
    pub patches_of: Version,
    /// [`UpstreamBuilds::patches_of`]'s patches, resolved.
    #[serde(skip)]
    pub patches: Vec<Patch>,
}

/// `[unpinned]`: any release of the project that the recipe does not pin, resolved from a
/// package index (its PEP 691 JSON page gives each file's URL, sha256 and upload time),
/// with the patches such a release takes, each checked against its tree before the build.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unpinned {
    /// The index's simple API root (`https://pypi.org/simple/`); `LLAMA_FORGE_INDEX_URL`
    /// stands in for it.
    pub index: String,
    /// The project's name there (`llama-cpp-python`).
    pub project: String,
    /// The sdist's leading dir, `{version}` standing for the release (`llama_cpp_python-{version}`).
    pub strip: String,
    /// CMake targets every such release adds to `cmake.targets`.
    #[serde(default)]
    pub extra_targets: Vec<String>,
    /// The pinned release whose patches such a release takes (the newest, as a rule):
    /// each shared one with its variants, the texts of other releases.
    pub patches_of: Version,
    /// Which llama.cpp build such a release's vendored tree is (`[unpinned.upstream]`):
    /// the commit read from the sdist, its build number asked of the repository's host.
    #[serde(default)]
    pub upstream: Option<UnpinnedUpstream>,
    /// More patches, after those: `[[unpinned.patch]]` entries as written.
    #[serde(default, rename = "patch")]
    pub patch_entries: Vec<PatchEntry>,
    /// [`Unpinned::patches_of`]'s patches, then [`Unpinned::patch_entries`], shared ones
    /// resolved with their variants: a shared patch brings the texts of other releases along.
    #[serde(skip)]
    pub patches: Vec<Patch>,
}

/// How a release the recipe does not pin names the llama.cpp build it vendors: the sdist
/// carries the submodule's commit (`commit_file`, a path below its leading dir), and the
/// build number, `git rev-list --count` of that commit, is the number of commits GitHub
/// lists from it (`count_url`, one per page: its last page's number).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnpinnedUpstream {
    /// The repository on GitHub, `owner/name` (`ggml-org/llama.cpp`).
    pub repo: String,
    /// The file in the sdist that holds the vendored tree's commit, 40 hex digits
    /// (`.git/modules/vendor/llama.cpp/HEAD`).
    pub commit_file: String,
    /// The commit list of `{commit}` in `{repo}`, one commit per page, below `{api}`
    /// (`https://api.github.com`, or `LLAMA_FORGE_GITHUB_API_URL`).
    pub count_url: String,
}

impl UnpinnedUpstream {
    /// The URL whose page count is the build number of `commit`.
    pub fn count_url(&self, api: &str, commit: &GitCommit) -> String {
        self.count_url
            .replace("{api}", api.trim_end_matches('/'))
            .replace("{repo}", &self.repo)
            .replace("{commit}", &commit.to_string())
    }
}

/// Where a release's pinned hash came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PinnedBy {
    /// The recipe pins it (reviewed).
    #[default]
    Recipe,
    /// The package index gave it (`page`: the project's page there).
    Index { page: String },
    /// A manifest recorded it (a rebuild of an unpinned release): where the manifest says
    /// the hash came from, kept as recorded so the rebuild's plan is the recorded one.
    Manifest { hash_from: String },
    /// The first download of a file whose publisher gives no hash (an upstream tag's
    /// tarball), on this machine: the URL of that download.
    FirstDownload { url: String },
    /// A local source, not pinned by anyone.
    Local,
}

impl PinnedBy {
    /// Where the hash came from, as the plan records it (`source.hash_from`); none for the
    /// recipe's own pin and a local source.
    pub fn hash_from(&self) -> Option<String> {
        match self {
            PinnedBy::Recipe | PinnedBy::Local => None,
            PinnedBy::Index { page } => Some(format!("the package index, {page}")),
            PinnedBy::Manifest { hash_from } => Some(hash_from.clone()),
            PinnedBy::FirstDownload { url } => Some(format!(
                "the first download of {url} into this cache (its publisher gives no sha256)"
            )),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    pub version: Version,
    /// The upstream llama.cpp build the pinned source carries (`[release.upstream]`): in
    /// the plan and manifest, and the build number and commit the binaries report.
    pub upstream: Option<Upstream>,
    #[serde(rename = "source")]
    pub sources: Vec<Source>,
    /// CMake targets this release adds to `cmake.targets` (tools that only it has).
    #[serde(default)]
    pub extra_targets: Vec<String>,
    /// The `[[release.patch]]` entries as written.
    #[serde(default, rename = "patch")]
    pub patch_entries: Vec<PatchEntry>,
    /// Changes to this release's source, applied after the recipe's own [`Recipe::patches`]:
    /// [`Release::patch_entries`], shared ones resolved.
    #[serde(skip)]
    pub patches: Vec<Patch>,
    /// Who pinned its source: the recipe, for every release read from it.
    #[serde(skip)]
    pub pinned_by: PinnedBy,
    /// The name artifacts carry where it is not the version: an upstream build's tag (`b11541`).
    #[serde(skip)]
    pub tag: Option<String>,
}

impl Release {
    /// The release as artifacts name it: its tag (`b11541`), else its version.
    pub fn name(&self) -> String {
        self.tag.clone().unwrap_or_else(|| self.version.to_string())
    }
}

/// The upstream build a release's pinned source carries: llama.cpp's commit and the
/// build number llama.cpp's own build gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Upstream {
    /// The repository on GitHub, `owner/name` (`ggml-org/llama.cpp`).
    pub repo: String,
    /// The commit the source's tree is, in full (40 hex digits).
    pub commit: GitCommit,
    /// llama.cpp's build number of that commit: `git rev-list --count <commit>` in a full
    /// clone, which is what its `cmake/build-info.cmake` computes (LLAMA_BUILD_NUMBER) and
    /// what its release tags are named by (`b<build>`).
    pub build: u32,
}

impl Upstream {
    /// What is wrong with it, before any source is seen (the commit is checked when parsed).
    fn problem(&self) -> Option<String> {
        let mut parts = self.repo.split('/');
        let named = |p: Option<&str>| {
            p.is_some_and(|p| {
                !p.is_empty()
                    && p != "."
                    && p != ".."
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            })
        };
        if !(named(parts.next()) && named(parts.next()) && parts.next().is_none()) {
            Some(format!(
                "`repo` is `{}`: expected a GitHub repository as owner/name (ggml-org/llama.cpp)",
                self.repo
            ))
        } else if self.build == 0 {
            Some(format!(
                "`build` is 0, which is what llama.cpp reports when it cannot tell: give the build number of {} (`git rev-list --count {}` in a full clone, the N of its release tag bN)",
                self.commit, self.commit
            ))
        } else {
            None
        }
    }
}

/// A git commit id in full: 40 hex digits, lower case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GitCommit(String);

impl GitCommit {
    /// How many hex digits llama.cpp's build shows: `git rev-parse --short` of its commits
    /// in a full clone of ggml-org/llama.cpp gives 9 (`b11312-0c1e57098`).
    pub const SHORT: usize = 9;

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first [`GitCommit::SHORT`] hex digits.
    pub fn short(&self) -> &str {
        &self.0[..Self::SHORT]
    }
}

impl std::str::FromStr for GitCommit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() == 40 && s.chars().all(|c| c.is_ascii_hexdigit()) {
            Ok(GitCommit(s.to_ascii_lowercase()))
        } else {
            Err(format!(
                "`{s}` is not a full git commit id: expected 40 hex digits (`git rev-parse <commit>`)"
            ))
        }
    }
}

impl std::fmt::Display for GitCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

serde_as_string!(GitCommit);

/// A change to the unpacked source: `find` must occur exactly once in `file` and is
/// replaced by `replace`. The whole text is in the plan (and so in the manifest and
/// its hash), with the reason; what the recipe says of it besides ([`PatchMeta`]: its
/// purpose, whether it is required, how to tell it is upstream) decides the patch check
/// ([`check`]) and is not part of the plan.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    /// The file, relative to the unpacked source root, `/`-separated.
    pub file: String,
    pub find: String,
    pub replace: String,
    pub reason: String,
    /// The targets it applies to (`x86_64-pc-windows-gnu`); empty: every target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<crate::platform::Target>,
    /// The recipe's word on the patch: not recorded in the plan.
    #[serde(skip)]
    #[schemars(skip)]
    pub meta: PatchMeta,
}

/// Two patches are the same change when the plan records them alike: [`Patch::meta`] is
/// the recipe's policy, not part of what is applied.
impl PartialEq for Patch {
    fn eq(&self, other: &Patch) -> bool {
        (
            &self.file,
            &self.find,
            &self.replace,
            &self.reason,
            &self.targets,
        ) == (
            &other.file,
            &other.find,
            &other.replace,
            &other.reason,
            &other.targets,
        )
    }
}

impl Eq for Patch {}

pub use check::{check, CheckedPatches, PatchFit, PatchMeta, Purpose, SkippedPatch};

impl Patch {
    /// What is wrong with the patch itself, before any source is seen.
    fn problem(&self) -> Option<String> {
        if let Some(why) = crate::relative_path_problem(&self.file) {
            Some(format!(
                "`file` must be a relative path inside the source: {why}"
            ))
        } else if self.find.is_empty() {
            Some("`find` is empty".into())
        } else if self.reason.trim().is_empty() {
            Some("needs a reason".into())
        } else {
            None
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub kind: SourceKind,
    pub url: String,
    pub sha256: Sha256Hex,
    /// The release's date, Unix seconds: when this file was published. For an sdist,
    /// its `upload-time` on the package index (PEP 700: `https://pypi.org/simple/<project>/`
    /// as JSON, or `upload_time_iso_8601` in `https://pypi.org/pypi/<project>/<version>/json`),
    /// cut to whole seconds, UTC. Not the entries' mtimes: scikit-build-core writes every
    /// entry of an sdist with one fixed mtime, 1667997441 (2022-11-09), whatever the release.
    /// Becomes SOURCE_DATE_EPOCH and every timestamp in the artifact. Checked when the
    /// archive is unpacked: it must be later than the newest entry ([`date_problem`]).
    pub date: u64,
    /// Leading directory inside the archive (`llama_cpp_python-0.3.16`).
    pub strip: String,
    /// Where in the built source the archive's tree goes (`vendor/llama.cpp` for an upstream
    /// llama.cpp tarball); none: it is the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// An sdist from the Python package index.
    Sdist,
    /// An upstream release tarball.
    Tarball,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CmakeSpec {
    /// The CMake project inside the unpacked source (`.` or `vendor/llama.cpp`). It builds
    /// in the same dir under `${BUILD}`; a `--source` dir is this project, copied there.
    pub project_dir: String,
    /// Oldest CMake the project accepts.
    pub min_cmake: Version,
    /// Run `cmake --install` into the staging dir after the build.
    pub install: bool,
    /// Targets to build; empty builds `all`.
    #[serde(default)]
    pub targets: Vec<String>,
    #[serde(default, rename = "define")]
    pub defines: Vec<Define>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Define {
    pub name: String,
    pub value: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WheelSpec {
    /// Project name as published (`llama-cpp-python`).
    pub project: String,
    /// Python packages copied from the source root into the wheel.
    pub packages: Vec<String>,
    /// Where shared libraries go inside the wheel (`llama_cpp/lib`).
    pub lib_dir: String,
    /// Where the built libraries are found (`${STAGE}/...` or `${BUILD}/...`).
    pub collect_from: String,
    /// Shared libraries the wheel must contain (base names: `llama` -> `libllama.so`).
    pub libraries: Vec<String>,
    /// Where the build leaves ggml's CPU backend variants (`${BUILD}/bin`), which the
    /// package's own install step does not install; the plan names which are shipped.
    pub modules_from: String,
    /// More that a CUDA build must contain (`ggml-cuda`).
    #[serde(default)]
    pub cuda_libraries: Vec<String>,
    /// How the package binds its libraries with ctypes (`[wheel.ctypes]`): what it binds
    /// is read from its modules, and each function must be exported before packaging.
    #[serde(default)]
    pub ctypes: Option<CtypesSpec>,
}

/// How a package declares the functions it binds with ctypes (llama_cpp's
/// `_ctypes_extensions.py`): a module loads one library with `loader("name", ...)` (or a
/// name assigned to a variable first) and declares each function with a decorator whose
/// first argument is the exported name, or a tuple of names of which one must be
/// exported; a handle's attribute (`_lib.llama_max_devices`) binds that name too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CtypesSpec {
    pub loader: String,
    pub decorators: Vec<String>,
    #[serde(default)]
    pub handles: Vec<String>,
    /// The C headers (paths in the source) whose structs the bindings lay out with ctypes
    /// (`_fields_`): each struct both define must have the same members, in order.
    #[serde(default)]
    pub headers: Vec<String>,
    /// Structs whose binding differs from the header in the releases themselves, each with
    /// why that is accepted: reported, not refused.
    #[serde(default)]
    pub known_layouts: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveSpec {
    /// Where the built executables and libraries are found (`${BUILD}/bin`).
    pub collect_from: String,
    /// Executables that must be there.
    pub binaries: Vec<String>,
    /// Executables shipped when the release builds them.
    #[serde(default)]
    pub optional_binaries: Vec<String>,
    /// Shared libraries (base names) that go beside them.
    pub libraries: Vec<String>,
    /// More that a CUDA build must contain (`ggml-cuda`).
    #[serde(default)]
    pub cuda_libraries: Vec<String>,
    /// Extra files copied from the CMake project dir (licenses).
    #[serde(default)]
    pub docs: Vec<String>,
}

/// What is wrong in a recipe that parses as TOML (reported as
/// [`RecipeError::Malformed`], with the recipe's path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecipeInvalid {
    #[error("`release`: at least one [[release]] is needed")]
    NoRelease,
    #[error("`release`: list releases newest first ({first} is listed before {second})")]
    ReleaseOrder { first: Version, second: Version },
    #[error("release {version}: at least one [[release.source]] is needed")]
    NoSource { version: Version },
    #[error("release {version}: [release.upstream]: {problem}")]
    BadUpstream { version: Version, problem: String },
    #[error("`cmake.define`: {name} is defined twice")]
    DefinedTwice { name: String },
    #[error("`cmake.define`: {name} needs a reason")]
    NoReason { name: String },
    #[error("patch of {file}: {problem}")]
    BadPatch { file: String, problem: String },
    #[error("`use = \"{name}\"`: no shared patch of that name in {set}; it has {known}")]
    UnknownSharedPatch {
        name: String,
        set: String,
        known: String,
    },
    #[error("`use = \"{name}\"` takes a shared patch, but the recipe names no set: add [shared_patches] with `file` (patches/<set>.toml) and `tree` (where that tree is in the source, or \".\")")]
    NoSharedPatches { name: String },
    #[error("`cmake.project_dir` must be a relative path inside the source, or \".\": {problem}")]
    BadProjectDir { problem: String },
    #[error("artifact = \"wheel\" needs a [wheel] table and no [archive]")]
    WheelTables,
    #[error("artifact = \"archive\" needs an [archive] table and no [wheel]")]
    ArchiveTables,
}

impl Recipe {
    /// Parses a recipe; a `[shared_patches]` set it names is read from beside `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Recipe, RecipeError> {
        let malformed = |message: String| RecipeError::Malformed {
            path: path.to_path_buf(),
            message,
        };
        let mut recipe: Recipe =
            toml::from_str(text).map_err(|e| malformed(e.to_string().trim_end().to_string()))?;
        let set = match &recipe.shared_patches {
            Some(shared) => {
                if let Some(problem) = shared.problem() {
                    return Err(malformed(problem));
                }
                patches::Set::load(path.parent().unwrap_or(Path::new(".")), shared)?
            }
            None => patches::Set::default(),
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        recipe.profile = match &recipe.profile_file {
            Some(f) => Some(Profile::load(&dir.join(f)).map_err(|e| match e {
                RecipeError::Read { path: at, source } => malformed(format!(
                    "its profile `{f}` cannot be read ({}: {source}): `profile` names a file relative to the recipe's dir (profiles/ggml.toml)",
                    at.display()
                )),
                other => other,
            })?),
            None => None,
        };
        let tree = recipe.shared_patches.as_ref().map(|s| s.tree.as_str());
        recipe.patches = set
            .resolve(&recipe.patch_entries, tree)
            .map_err(|e| malformed(e.to_string()))?;
        for r in &mut recipe.releases {
            r.patches = set
                .resolve(&r.patch_entries, tree)
                .map_err(|e| malformed(format!("release {}: {e}", r.version)))?;
        }
        if let Some(u) = &mut recipe.unpinned {
            u.patches =
                patches_of(&recipe.releases, &u.patches_of, "[unpinned]").map_err(malformed)?;
            u.patches.extend(
                set.resolve(&u.patch_entries, tree)
                    .map_err(|e| malformed(format!("[unpinned]: {e}")))?,
            );
            if !u.strip.contains("{version}") || u.strip.contains(['/', '\\']) {
                return Err(malformed(format!(
                    "[unpinned]: `strip` is `{}`: expected the sdist's leading dir with {{version}} for the release (llama_cpp_python-{{version}})",
                    u.strip
                )));
            }
        }
        if let Some(u) = &mut recipe.upstream_builds {
            u.patches = patches_of(&recipe.releases, &u.patches_of, "[upstream_builds]")
                .map_err(malformed)?;
            let problem = [&u.url, &u.strip]
                .iter()
                .find(|t| !t.contains("{build}"))
                .map(|t| format!("`{t}` has no {{build}} for the build number"))
                .or_else(|| {
                    crate::relative_path_problem(&u.under)
                        .map(|w| format!("`under` must be a relative path inside the source: {w}"))
                })
                .or_else(|| {
                    (!u.url.starts_with("https://") && !u.url.starts_with("http://")).then(|| {
                        format!(
                            "`url` is `{}`: only http and https URLs are downloaded",
                            u.url
                        )
                    })
                });
            if let Some(p) = problem {
                return Err(malformed(format!("[upstream_builds]: {p}")));
            }
        }
        recipe.validate().map_err(|e| malformed(e.to_string()))?;
        let every_patch = recipe
            .patches
            .iter()
            .chain(recipe.releases.iter().flat_map(|r| &r.patches))
            .chain(recipe.unpinned.iter().flat_map(|u| &u.patches))
            .chain(recipe.upstream_builds.iter().flat_map(|u| &u.patches))
            .cloned()
            .collect::<Vec<_>>();
        profile::check_provides(&every_patch, recipe.profile.as_ref()).map_err(malformed)?;
        Ok(recipe)
    }

    pub fn load(path: &Path) -> Result<Recipe, RecipeError> {
        let text = fs_err::read_to_string(path).map_err(|source| RecipeError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Recipe::parse(&text, path)
    }

    /// The pinned release `version`, if the recipe pins it.
    pub fn pinned(&self, version: &Version) -> Option<&Release> {
        self.releases.iter().find(|r| &r.version == version)
    }

    /// A release the recipe does not pin, from its `[unpinned]` template: `source` (its
    /// URL, sha256 and date, from wherever `pinned_by` says), the template's patches and
    /// extra targets. None where the recipe takes no unpinned release.
    pub fn unpinned_release(
        &self,
        version: &Version,
        url: String,
        sha256: Sha256Hex,
        date: u64,
        pinned_by: PinnedBy,
    ) -> Option<Release> {
        let u = self.unpinned.as_ref()?;
        Some(Release {
            version: version.clone(),
            upstream: None,
            sources: vec![Source {
                kind: SourceKind::Sdist,
                url,
                sha256,
                date,
                strip: u.strip.replace("{version}", &version.to_string()),
                under: None,
            }],
            extra_targets: u.extra_targets.clone(),
            patch_entries: vec![],
            patches: u.patches.clone(),
            pinned_by,
            tag: None,
        })
    }

    /// llama.cpp's build `build` from upstream's tag tarball (`[upstream_builds]`): its
    /// sha256 and date as the caller found them, its commit from the tarball.
    pub fn build_release(
        &self,
        build: u32,
        sha256: Sha256Hex,
        date: u64,
        commit: GitCommit,
        pinned_by: PinnedBy,
    ) -> Option<Release> {
        let u = self.upstream_builds.as_ref()?;
        let n = build.to_string();
        Some(Release {
            version: Version::from_parts([u64::from(build)]),
            upstream: Some(Upstream {
                repo: u.repo.clone(),
                commit,
                build,
            }),
            sources: vec![Source {
                kind: SourceKind::Tarball,
                url: u.url.replace("{build}", &n),
                sha256,
                date,
                strip: u.strip.replace("{build}", &n),
                under: Some(u.under.clone()),
            }],
            extra_targets: vec![],
            patch_entries: vec![],
            patches: u.patches.clone(),
            pinned_by,
            tag: Some(format!("b{build}")),
        })
    }

    /// Finds `recipes/<name>.toml`.
    pub fn find(dir: &Path, name: &str) -> Result<Recipe, RecipeError> {
        let path = dir.join(format!("{name}.toml"));
        if path.is_file() && !name.contains(['/', '\\']) {
            return Recipe::load(&path);
        }
        if !dir.is_dir() {
            return Err(RecipeError::NoRecipes {
                dir: dir.to_path_buf(),
            });
        }
        Err(RecipeError::Unknown {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            known: list(dir).join(", "),
        })
    }

    pub fn release(&self, version: Option<&Version>) -> Result<&Release, RecipeError> {
        match version {
            None => Ok(&self.releases[0]),
            Some(v) => self
                .releases
                .iter()
                .find(|r| &r.version == v)
                .ok_or_else(|| RecipeError::UnknownRelease {
                    recipe: self.name.clone(),
                    version: v.to_string(),
                    known: self
                        .releases
                        .iter()
                        .map(|r| r.version.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    unpinned: match &self.unpinned {
                        Some(u) => format!(
                            "; any other release of {} is taken from the package index ({})",
                            u.project, u.index
                        ),
                        None => String::new(),
                    },
                }),
        }
    }

    fn validate(&self) -> Result<(), RecipeInvalid> {
        if self.releases.is_empty() {
            return Err(RecipeInvalid::NoRelease);
        }
        for pair in self.releases.windows(2) {
            if pair[0].version <= pair[1].version {
                return Err(RecipeInvalid::ReleaseOrder {
                    first: pair[0].version.clone(),
                    second: pair[1].version.clone(),
                });
            }
        }
        for r in &self.releases {
            if r.sources.is_empty() {
                return Err(RecipeInvalid::NoSource {
                    version: r.version.clone(),
                });
            }
            if let Some(problem) = r.upstream.as_ref().and_then(Upstream::problem) {
                return Err(RecipeInvalid::BadUpstream {
                    version: r.version.clone(),
                    problem,
                });
            }
        }
        for p in self
            .patches
            .iter()
            .chain(self.releases.iter().flat_map(|r| &r.patches))
            .chain(self.unpinned.iter().flat_map(|u| &u.patches))
        {
            if let Some(problem) = p.problem() {
                return Err(RecipeInvalid::BadPatch {
                    file: p.file.clone(),
                    problem,
                });
            }
        }
        if self.cmake.project_dir != "." {
            if let Some(problem) = crate::relative_path_problem(&self.cmake.project_dir) {
                return Err(RecipeInvalid::BadProjectDir {
                    problem: problem.to_string(),
                });
            }
        }
        let mut seen = BTreeSet::new();
        for d in &self.cmake.defines {
            if !seen.insert(&d.name) {
                return Err(RecipeInvalid::DefinedTwice {
                    name: d.name.clone(),
                });
            }
            if d.reason.trim().is_empty() {
                return Err(RecipeInvalid::NoReason {
                    name: d.name.clone(),
                });
            }
        }
        match (self.artifact, &self.wheel, &self.archive) {
            (ArtifactKind::Wheel, Some(_), None) | (ArtifactKind::Archive, None, Some(_)) => Ok(()),
            (ArtifactKind::Wheel, _, _) => Err(RecipeInvalid::WheelTables),
            (ArtifactKind::Archive, _, _) => Err(RecipeInvalid::ArchiveTables),
        }
    }
}

/// The patches of the pinned release `version`, which a `table` of releases the recipe does
/// not pin takes (`patches_of`).
fn patches_of(releases: &[Release], version: &Version, table: &str) -> Result<Vec<Patch>, String> {
    releases
        .iter()
        .find(|r| &r.version == version)
        .map(|r| r.patches.clone())
        .ok_or_else(|| format!("{table}: `patches_of` is {version}, which the recipe does not pin"))
}

/// What is wrong with a pinned source's `date` ([`Source::date`]), given the newest
/// entry mtime of its archive: a file is published after every file in it, so a date
/// at or before that is a placeholder (such as scikit-build-core's fixed mtime) or a typo.
pub fn date_problem(recipe: &str, url: &str, date: u64, newest_entry: u64) -> Option<String> {
    (date <= newest_entry).then(|| {
        format!(
            "recipe `{recipe}` dates {url} {date} ({}), yet its newest entry is from {newest_entry} ({}): \
             `date` is when the file was published, which is later than every file in it; \
             for an sdist, set it to the file's upload-time on the package index \
             (https://pypi.org/simple/<project>/ with `Accept: application/vnd.pypi.simple.v1+json`), \
             in Unix seconds",
            utc(date),
            utc(newest_entry)
        )
    })
}

/// `YYYY-MM-DDTHH:MM:SS[.frac]Z` (RFC 3339 in UTC, as PEP 700's upload-time) as Unix
/// seconds, the fraction cut: the inverse of [`utc`].
pub fn parse_utc(text: &str) -> Option<u64> {
    let re =
        regex::Regex::new(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|\+00:00)$")
            .expect("static regex");
    let c = re.captures(text)?;
    let n = |i: usize| c[i].parse::<u64>().ok();
    let (y, m, d, hh, mm, ss) = (n(1)?, n(2)?, n(3)?, n(4)?, n(5)?, n(6)?);
    if !(1970..=9999).contains(&y)
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&d)
        || hh > 23
        || mm > 59
        || ss > 60
    {
        return None;
    }
    // Days from 1970-01-01 to a civil date (H. Hinnant's `days_from_civil`).
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y / 400;
    let yoe = y % 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    (utc(secs) == format!("{}Z", &text[..19])).then_some(secs)
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (the proleptic Gregorian calendar, UTC).
pub fn utc(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (H. Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Names of the recipes in `dir`, sorted.
pub fn list(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".toml"))
                .map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

/// The fixture recipes, `tests/fixtures/recipes/`: copies of the live recipes
/// pinned to releases 0.3.36 and 0.3.16, so that unit tests do not change when a
/// recipe in `recipes/` gains a release.
#[cfg(test)]
pub(crate) fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/recipes")
}

/// The fixture recipe `name` (`llama.cpp`, `llama-cpp-python`); see [`fixture_dir`].
#[cfg(test)]
pub(crate) fn fixture(name: &str) -> Recipe {
    Recipe::find(&fixture_dir(), name).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live recipes: only [`live_recipes_load_and_agree`] reads them.
    fn repo_recipes() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes")
    }

    /// Every recipe in `recipes/` loads under its file name, lists its releases
    /// newest first (the first is the default), and where two recipes pin the
    /// same download they pin the same sha256, date, release number and upstream build.
    #[test]
    fn live_recipes_load_and_agree() {
        let names = list(&repo_recipes());
        assert!(
            names.contains(&"llama.cpp".to_string())
                && names.contains(&"llama-cpp-python".to_string()),
            "{names:?}"
        );
        let mut by_url: std::collections::BTreeMap<String, (String, &Source, &Release)> =
            Default::default();
        let recipes: Vec<Recipe> = names
            .iter()
            .map(|n| Recipe::find(&repo_recipes(), n).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        for (name, r) in names.iter().zip(&recipes) {
            assert_eq!(&r.name, name);
            let newest = r.releases.iter().map(|rel| &rel.version).max().unwrap();
            assert_eq!(&r.release(None).unwrap().version, newest, "{name}");
            for rel in &r.releases {
                for s in &rel.sources {
                    let (other, seen, release) = by_url
                        .entry(s.url.clone())
                        .or_insert_with(|| (name.clone(), s, rel));
                    assert!(
                        seen.sha256 == s.sha256
                            && seen.date == s.date
                            && release.version == rel.version
                            && release.upstream == rel.upstream,
                        "{name} and {other} pin {} differently",
                        s.url
                    );
                }
            }
        }
    }

    /// Both live recipes take llama.cpp's patches from the one shared set, on the same
    /// tree (the sdist's vendor/llama.cpp, which both unpack whole): a patch taken by both
    /// is the same change to the same file, so the tree both compile is the same.
    #[test]
    fn live_recipes_share_llama_cpp_patches() {
        let resolved = |name: &str| {
            let r = Recipe::find(&repo_recipes(), name).unwrap();
            let tree = r.shared_patches.clone().expect("[shared_patches]").tree;
            let entries: Vec<&PatchEntry> = r
                .patch_entries
                .iter()
                .chain(r.releases.iter().flat_map(|rel| &rel.patch_entries))
                .collect();
            let patches: Vec<Patch> = r
                .patches
                .iter()
                .chain(r.releases.iter().flat_map(|rel| &rel.patches))
                .cloned()
                .collect();
            (
                tree,
                entries
                    .into_iter()
                    .cloned()
                    .zip(patches)
                    .collect::<Vec<_>>(),
            )
        };
        let (py_tree, py) = resolved("llama-cpp-python");
        let (cpp_tree, cpp) = resolved("llama.cpp");
        assert_eq!(
            (py_tree.as_str(), cpp_tree.as_str()),
            ("vendor/llama.cpp", "vendor/llama.cpp")
        );
        let shared = |v: &[(PatchEntry, Patch)]| -> Vec<(String, Patch)> {
            v.iter()
                .filter_map(|(e, p)| match e {
                    PatchEntry::Use(n) => Some((n.clone(), p.clone())),
                    PatchEntry::Own(_) => None,
                })
                .collect()
        };
        let (py, cpp) = (shared(&py), shared(&cpp));
        assert!(py.len() >= 6, "{py:?}");
        assert_eq!(
            py.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            cpp.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
        for ((name, p), (_, c)) in py.iter().zip(&cpp) {
            assert!(
                p.file.starts_with("vendor/llama.cpp/"),
                "{name}: {}",
                p.file
            );
            assert_eq!(p, c, "{name}");
        }
    }

    #[test]
    fn fixture_recipes_parse() {
        for name in ["llama-cpp-python", "llama.cpp"] {
            let r = fixture(name);
            assert_eq!(r.name, name);
            let versions: Vec<String> = r.releases.iter().map(|r| r.version.to_string()).collect();
            assert_eq!(versions, ["0.3.36", "0.3.16"], "{name}");
        }
    }

    #[test]
    fn unknown_recipe_lists_known_ones() {
        let e = Recipe::find(&fixture_dir(), "llama")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("llama-cpp-python") && e.contains("llama.cpp"),
            "{e}"
        );
    }

    #[test]
    fn malformed_recipe_names_line_and_field() {
        let text = std::fs::read_to_string(fixture_dir().join("llama-cpp-python.toml")).unwrap();
        let broken = text.replacen("sha256 = ", "sha = ", 1);
        let e = Recipe::parse(&broken, &fixture_dir().join("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.toml") && e.contains("line") && e.contains("sha"),
            "{e}"
        );
        let bad_hash = text.replacen("sha256 = \"", "sha256 = \"zz", 1);
        let e = Recipe::parse(&bad_hash, &fixture_dir().join("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a sha256"), "{e}");
    }

    #[test]
    fn a_patch_that_leaves_the_source_or_says_nothing_is_refused() {
        let text = std::fs::read_to_string(fixture_dir().join("llama-cpp-python.toml")).unwrap();
        let good = "file = \"llama_cpp/llama_cpp.py\"";
        assert!(text.contains(good));
        let refused = |t: &str| {
            Recipe::parse(t, &fixture_dir().join("x.toml"))
                .unwrap_err()
                .to_string()
        };
        for bad in [
            "../setup.py",
            "/etc/passwd",
            "llama_cpp/../../x",
            "./x",
            "a//b",
            "C:/x",
            "a\\\\b",
            "",
            "a\\tb",
        ] {
            let e = refused(&text.replacen(good, &format!("file = \"{bad}\""), 1));
            assert!(
                e.contains("must be a relative path inside the source: it"),
                "{bad}: {e}"
            );
        }
        let reason = text
            .lines()
            .find(|l| l.starts_with("reason = \"the wheel's ggml is built"))
            .unwrap();
        let e = refused(&text.replacen(reason, "reason = \" \"", 1));
        assert!(
            e.contains("patch of llama_cpp/llama_cpp.py: needs a reason"),
            "{e}"
        );
    }

    /// A profile that is not there is named with where it was looked for.
    #[test]
    fn a_missing_profile_is_named() {
        let text = std::fs::read_to_string(fixture_dir().join("llama.cpp.toml")).unwrap();
        let e = Recipe::parse(&text, Path::new("/nowhere/recipes/x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("malformed recipe /nowhere/recipes/x.toml: its profile `../../../recipes/profiles/ggml.toml` cannot be read (/nowhere/recipes/../../../recipes/profiles/ggml.toml: "),
            "{e}"
        );
    }

    /// `[release.upstream]`: a full commit id, an owner/name repository and a build number.
    #[test]
    fn upstream_is_checked() {
        let text = std::fs::read_to_string(fixture_dir().join("llama.cpp.toml")).unwrap();
        let r = Recipe::parse(&text, &fixture_dir().join("x.toml")).unwrap();
        let u = r.releases[1].upstream.as_ref().unwrap();
        assert_eq!(
            (
                u.repo.as_str(),
                u.commit.as_str(),
                u.commit.short(),
                u.build
            ),
            (
                "ggml-org/llama.cpp",
                "4227c9be4268ac844921b90f31595f81236bd317",
                "4227c9be4",
                6170
            )
        );
        let refused = |from: &str, to: &str| {
            assert!(text.contains(from), "{from}");
            Recipe::parse(&text.replacen(from, to, 1), &fixture_dir().join("x.toml"))
                .unwrap_err()
                .to_string()
        };
        let commit = "commit = \"0c1e57098bba43ac29e6e3b677cdceebdd22334f\"";
        for short in [
            "0c1e57098",
            "0c1e57098bba43ac29e6e3b677cdceebdd22334fa",
            "g",
        ] {
            let e = refused(commit, &format!("commit = \"{short}\""));
            assert!(
                e.contains("x.toml")
                    && e.contains("is not a full git commit id: expected 40 hex digits"),
                "{e}"
            );
        }
        let e = refused("build = 11312", "build = \"b11312\"");
        assert!(e.contains("x.toml") && e.contains("build"), "{e}");
        let e = refused("build = 11312", "build = -1");
        assert!(e.contains("x.toml") && e.contains("build"), "{e}");
        let e = refused("build = 11312", "build = 0");
        assert!(
            e.contains("release 0.3.36: [release.upstream]: `build` is 0")
                && e.contains("git rev-list --count 0c1e57098bba43ac29e6e3b677cdceebdd22334f"),
            "{e}"
        );
        for repo in [
            "llama.cpp",
            "ggml-org/llama.cpp/x",
            "/llama.cpp",
            "ggml-org/..",
            "a b/c",
        ] {
            let e = refused(
                "repo = \"ggml-org/llama.cpp\"",
                &format!("repo = \"{repo}\""),
            );
            assert!(
                e.contains("expected a GitHub repository as owner/name"),
                "{repo}: {e}"
            );
        }
        let e = refused("build = 11312\n", "build = 11312\nbuild_tag = \"b11312\"\n");
        assert!(e.contains("unknown field `build_tag`"), "{e}");
    }

    /// A pinned source's date must postdate every entry in its archive.
    #[test]
    fn a_date_before_the_archive_is_refused() {
        let url = "https://files.pythonhosted.org/x/llama_cpp_python-0.3.36.tar.gz";
        assert_eq!(date_problem("llama.cpp", url, 1790833681, 1667997441), None);
        assert!(date_problem("llama.cpp", url, 1667997441, 1667997441).is_some());
        insta::assert_snapshot!(
            "date_before_the_archive",
            date_problem("llama.cpp", url, 1667997441, 1667997441).unwrap()
        );
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1790833681), "2026-10-01T05:48:01Z");
        assert_eq!(utc(1755233909), "2025-08-15T04:58:29Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(parse_utc("2026-10-01T05:48:01.345495Z"), Some(1790833681));
        assert_eq!(parse_utc("2025-08-15T04:58:29Z"), Some(1755233909));
        assert_eq!(parse_utc("2000-02-29T00:00:00+00:00"), Some(951_782_400));
        for bad in [
            "2026-02-30T00:00:00Z",
            "2026-10-01 05:48:01Z",
            "2026-10-01T05:48:01+02:00",
            "x",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
    }

    #[test]
    fn unknown_release_is_an_error() {
        let r = fixture("llama-cpp-python");
        let e = r
            .release(Some(&"9.9.9".parse().unwrap()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("9.9.9") && e.contains("0.3.16"), "{e}");
        assert_eq!(r.release(None).unwrap().version, r.releases[0].version);
    }

    /// The messages users see, as they read them (recipe path fixed, releases fixed).
    #[test]
    fn error_messages() {
        let mut r = fixture("llama-cpp-python");
        let mut older = r.releases[0].clone();
        r.releases[0].version = "0.3.16".parse().unwrap();
        older.version = "0.3.2".parse().unwrap();
        r.releases.truncate(1);
        r.releases.push(older);
        insta::assert_snapshot!(
            "unknown_release",
            r.release(Some(&"9.9.9".parse().unwrap()))
                .unwrap_err()
                .to_string()
        );
        let text = "name = \"demo\"\nartifact = \"wheel\"\nsource_url = \"https://example.com\"\n";
        insta::assert_snapshot!(
            "malformed_recipe",
            Recipe::parse(text, Path::new("recipes/demo.toml"))
                .unwrap_err()
                .to_string()
        );
        r.releases.reverse();
        insta::assert_snapshot!(
            "releases_out_of_order",
            RecipeError::Malformed {
                path: "recipes/demo.toml".into(),
                message: r.validate().unwrap_err().to_string(),
            }
            .to_string()
        );
    }
}
