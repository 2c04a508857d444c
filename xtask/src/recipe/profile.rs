//! A recipe's profile (`profile = "profiles/ggml.toml"`): ggml's build policy as data. The
//! defines every build of a ggml tree sets (the optional dependencies among them, with the
//! libraries each would link), GGML_CPU_ALL_VARIANTS and GGML_CUDA with their reasons, and
//! the features a recipe's patch may provide (the define it reads, its reason, the CUDA
//! groups). A recipe without a profile gets none of it. The plan reads it; it does no I/O.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{Patch, RecipeError};
use crate::platform::{Arch, Target};

/// A profile file, every key checked (`deny_unknown_fields`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The defines every build sets, in the order the plan records them.
    #[serde(rename = "define")]
    pub defines: Vec<ProfileDefine>,
    pub cpu_variants: CpuVariants,
    pub cuda: CudaSwitch,
    #[serde(rename = "feature", default)]
    pub features: Features,
}

/// A `[[define]]`: a CMake define every build sets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileDefine {
    pub name: String,
    pub value: String,
    pub reason: String,
    /// Libraries it would link (file-name prefixes): when one of them turns up in an
    /// artifact undeclared, the packaging gate names this define.
    #[serde(default)]
    pub links: Vec<String>,
    /// The reason on a target where it differs, by the target's triple.
    #[serde(default)]
    pub reason_on: BTreeMap<String, String>,
}

impl ProfileDefine {
    /// The reason on `target`.
    pub fn reason_for(&self, target: Target) -> &str {
        self.reason_on.get(target.triple()).unwrap_or(&self.reason)
    }
}

/// `[cpu_variants]`: GGML_CPU_ALL_VARIANTS.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuVariants {
    pub name: String,
    pub value: String,
    /// `{built}` where every variant ggml knows is compiled.
    pub all: String,
    /// `{built}` where only the shipped ones are (a patch provides `cpu-variants`).
    pub subset: String,
    /// The reason per architecture (`x86_64`, `aarch64`).
    pub reason: BTreeMap<String, String>,
}

/// `[cuda]`: GGML_CUDA, on for a GPU build (`{arch}` the --arch asked for), off for a CPU one.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaSwitch {
    pub name: String,
    pub on: String,
    pub off: String,
}

/// `[feature.*]`: the defines only a recipe's patch reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Features {
    pub cpu_variants: Option<FeatureDefine>,
    pub cuda_groups: Option<CudaGroups>,
}

/// A feature's define and why it is set.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureDefine {
    pub define: String,
    pub reason: String,
}

/// `[feature.cuda-groups]`: ggml-cuda's files compiled in groups, `FAMILY:SIZE`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaGroups {
    pub define: String,
    pub reason: String,
    pub families: Vec<CudaFamily>,
}

/// A family of ggml-cuda's files, and how many a group takes at most.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaFamily {
    pub name: String,
    pub size: u8,
}

impl CudaGroups {
    /// The define's value: `mmq:2,mmf:4,...`.
    pub fn value(&self) -> String {
        self.families
            .iter()
            .map(|f| format!("{}:{}", f.name, f.size))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// What a recipe's patch provides: a define the plan sets only where a patch of the
/// release reads it (`provides = ["cpu-variants"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    /// Only the shipped CPU variants are compiled (the profile's `[feature.cpu-variants]`).
    CpuVariants,
    /// ggml-cuda's files compiled in groups (the profile's `[feature.cuda-groups]`).
    CudaGroups,
    /// The archive's tools share one C++ runtime, linked from the toolchain's libstdc++.a
    /// (`LLAMA_FORGE_CXX_RUNTIME`, the tool's own mechanism: no profile needed).
    SharedCxxRuntime,
}

impl Feature {
    /// The name a recipe writes.
    pub fn name(self) -> &'static str {
        match self {
            Feature::CpuVariants => "cpu-variants",
            Feature::CudaGroups => "cuda-groups",
            Feature::SharedCxxRuntime => "shared-cxx-runtime",
        }
    }

    /// The define a patch that provides it reads: the profile's, or the tool's own.
    pub fn define(self, profile: Option<&Profile>) -> Option<&str> {
        match self {
            Feature::CpuVariants => profile?
                .features
                .cpu_variants
                .as_ref()
                .map(|f| f.define.as_str()),
            Feature::CudaGroups => profile?
                .features
                .cuda_groups
                .as_ref()
                .map(|f| f.define.as_str()),
            Feature::SharedCxxRuntime => Some(CXX_RUNTIME),
        }
    }

    pub const ALL: [Feature; 3] = [
        Feature::CpuVariants,
        Feature::CudaGroups,
        Feature::SharedCxxRuntime,
    ];
}

/// [`Feature::SharedCxxRuntime`]'s define: the static C++ runtime (`libstdc++.a`) to link
/// the tools' shared runtime from. Set only where a patch reads it and each library would
/// otherwise link its own copy.
pub const CXX_RUNTIME: &str = "LLAMA_FORGE_CXX_RUNTIME";

/// Whether one of `patches` provides `feature`.
pub fn provided(patches: &[Patch], feature: Feature) -> bool {
    patches.iter().any(|p| p.meta.provides.contains(&feature))
}

/// The placeholders each template may hold.
const CPU_REASON_KEYS: &[&str] = &["built", "baseline", "shipped", "not_built"];

impl Profile {
    pub fn load(path: &Path) -> Result<Profile, RecipeError> {
        let text = fs_err::read_to_string(path).map_err(|source| RecipeError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Profile::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Profile, RecipeError> {
        let malformed = |message: String| RecipeError::Malformed {
            path: path.to_path_buf(),
            message,
        };
        let profile: Profile =
            toml::from_str(text).map_err(|e| malformed(e.to_string().trim_end().to_string()))?;
        profile.problem().map_or(Ok(profile), |p| Err(malformed(p)))
    }

    /// What is wrong with the profile: a define twice or without a reason, a target or
    /// architecture that does not exist, a placeholder a template cannot hold.
    fn problem(&self) -> Option<String> {
        let mut seen = std::collections::BTreeSet::new();
        for d in &self.defines {
            if !seen.insert(d.name.as_str()) {
                return Some(format!("[[define]] `{}` is given twice", d.name));
            }
            if d.reason.trim().is_empty() {
                return Some(format!("[[define]] `{}` needs a reason", d.name));
            }
            for (t, why) in &d.reason_on {
                if t.parse::<Target>().is_err() {
                    return Some(format!(
                        "[[define]] `{}`: reason_on names `{t}`, not a target (one of {})",
                        d.name,
                        Target::ALL.map(|t| t.triple()).join(", ")
                    ));
                }
                if why.trim().is_empty() {
                    return Some(format!("[[define]] `{}`: reason_on `{t}` is empty", d.name));
                }
            }
        }
        let c = &self.cpu_variants;
        for arch in Arch::ALL {
            let Some(reason) = c.reason.get(&arch.to_string()) else {
                return Some(format!(
                    "[cpu_variants.reason] has no `{arch}`: give the reason for {arch} builds"
                ));
            };
            if let Some(p) = unknown_placeholder(reason, CPU_REASON_KEYS) {
                return Some(format!("[cpu_variants.reason] `{arch}`: {p}"));
            }
        }
        if let Some(k) = c
            .reason
            .keys()
            .find(|k| !Arch::ALL.iter().any(|a| a.to_string() == **k))
        {
            return Some(format!(
                "[cpu_variants.reason] names `{k}`, not an architecture (x86_64, aarch64)"
            ));
        }
        for (key, text) in [("all", &c.all), ("subset", &c.subset)] {
            if let Some(p) = unknown_placeholder(text, &["define"]) {
                return Some(format!("[cpu_variants] `{key}`: {p}"));
            }
        }
        if let Some(p) = unknown_placeholder(&self.cuda.on, &["arch"])
            .or_else(|| unknown_placeholder(&self.cuda.off, &[]))
        {
            return Some(format!("[cuda]: {p}"));
        }
        if let Some(g) = &self.features.cuda_groups {
            if let Some(f) = g.families.iter().find(|f| f.size == 0) {
                return Some(format!(
                    "[feature.cuda-groups] family `{}` has size 0: a group takes at least one file",
                    f.name
                ));
            }
        }
        None
    }

    /// The defines that decide a library the artifact may link (the optional
    /// dependencies), for the packaging gate.
    pub fn deciding_define(&self, library: &str) -> Option<&ProfileDefine> {
        self.defines
            .iter()
            .filter(|d| !d.name.starts_with("CMAKE_DISABLE_FIND_PACKAGE_"))
            .find(|d| d.links.iter().any(|l| library.starts_with(l.as_str())))
    }
}

/// `{name}` filled in for each of `values`.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    values.iter().fold(template.to_string(), |t, (k, v)| {
        t.replace(&format!("{{{k}}}"), v)
    })
}

/// The first `{...}` in `text` that is not one of `keys`, as a message.
fn unknown_placeholder(text: &str, keys: &[&str]) -> Option<String> {
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let end = after.find('}')?;
        let key = &after[..end];
        if !keys.contains(&key) {
            return Some(format!(
                "`{{{key}}}` is not a placeholder it may hold ({})",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.iter()
                        .map(|k| format!("{{{k}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ));
        }
        rest = &after[end + 1..];
    }
    None
}

/// Every patch that provides a feature reads its define (each of its texts), and every
/// patch that reads a feature's define says it provides it: what the plan sets is what a
/// patch reads, never found by searching patch text.
pub fn check_provides(patches: &[Patch], profile: Option<&Profile>) -> Result<(), String> {
    for p in patches {
        let texts: Vec<&Patch> = std::iter::once(p).chain(&p.meta.variants).collect();
        let label = p
            .meta
            .name
            .clone()
            .unwrap_or_else(|| format!("the patch of {}", p.file));
        for f in Feature::ALL {
            let provides = p.meta.provides.contains(&f);
            let Some(define) = f.define(profile) else {
                if provides {
                    return Err(format!(
                        "patch `{label}` provides `{}`, which the recipe's profile does not define: name a profile with [feature.{}] (profile = \"profiles/ggml.toml\") or drop it from `provides`",
                        f.name(),
                        f.name()
                    ));
                }
                continue;
            };
            for t in &texts {
                // A CMake read, `${NAME}`: a comment that names the define is not one.
                let reads = t.replace.contains(&format!("${{{define}}}"));
                if provides && !reads {
                    return Err(format!(
                        "patch `{label}` provides `{}` but its replace text for {} does not read {define}: the plan would set a define nothing reads",
                        f.name(),
                        t.file
                    ));
                }
                if reads && !provides {
                    return Err(format!(
                        "patch `{label}` reads {define} but does not say so: add `provides = [\"{}\"]`, or the plan never sets it",
                        f.name()
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live() -> String {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes/profiles/ggml.toml"),
        )
        .unwrap()
    }

    fn refused(text: &str) -> String {
        Profile::parse(text, Path::new("profiles/ggml.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_live_profile_loads_with_every_table() {
        let p = Profile::parse(&live(), Path::new("ggml.toml")).unwrap();
        assert_eq!(p.defines[0].name, "GGML_NATIVE");
        assert_eq!(p.defines.last().unwrap().name, "GGML_BACKEND_DL");
        let omp = p.defines.iter().find(|d| d.name == "GGML_OPENMP").unwrap();
        assert!(omp
            .reason_for(Target::WINDOWS_GNU)
            .contains("libgomp-1.dll"));
        assert!(omp.reason_for(Target::LINUX_X86_64).contains("manylinux"));
        assert_eq!(
            p.features.cuda_groups.as_ref().unwrap().value(),
            "mmq:2,mmf:4,fattn-vec:4,fattn-mma-f16:2,fattn-tile:2,ops:7"
        );
        assert_eq!(
            p.deciding_define("libnccl.so.2").map(|d| d.name.as_str()),
            Some("GGML_CUDA_NCCL")
        );
    }

    /// Every mistake names the table and what to do.
    #[test]
    fn a_broken_profile_is_refused_naming_the_key() {
        let text = live();
        let e = refused(&text.replacen("name = \"GGML_CCACHE\"", "name = \"GGML_NATIVE\"", 1));
        assert!(e.contains("[[define]] `GGML_NATIVE` is given twice"), "{e}");
        let e =
            refused(&text.replacen("\"x86_64-pc-windows-gnu\" =", "\"x86_64-pc-windows\" =", 1));
        assert!(
            e.contains("reason_on names `x86_64-pc-windows`, not a target (one of x86_64-unknown-linux-gnu"),
            "{e}"
        );
        let e = refused(&text.replacen("the {baseline} floor", "the {floor} floor", 1));
        assert!(
            e.contains("[cpu_variants.reason] `x86_64`: `{floor}` is not a placeholder it may hold ({built}, {baseline}, {shipped}, {not_built})"),
            "{e}"
        );
        let e = refused(&text.replacen("GPU build: --arch {arch}", "GPU build: {request}", 1));
        assert!(
            e.contains("[cuda]: `{request}` is not a placeholder"),
            "{e}"
        );
        let e = refused(&text.replacen("aarch64 = ", "arm64 = ", 1));
        assert!(e.contains("[cpu_variants.reason] has no `aarch64`"), "{e}");
        let e = refused(&text.replacen("size = 7", "size = 0", 1));
        assert!(e.contains("family `ops` has size 0"), "{e}");
        let e = refused(&text.replacen("[cuda]\n", "[cuda]\nswitch = \"x\"\n", 1));
        assert!(e.contains("unknown field `switch`"), "{e}");
    }

    fn patch(replace: &str, provides: &[Feature]) -> Patch {
        Patch {
            file: "ggml/src/CMakeLists.txt".into(),
            find: "a".into(),
            replace: replace.into(),
            reason: "test".into(),
            targets: vec![],
            meta: super::super::PatchMeta {
                name: Some("p".into()),
                provides: provides.to_vec(),
                ..Default::default()
            },
        }
    }

    /// What a patch provides is declared and checked against its text: a feature it does not
    /// read, a define it reads without saying so, a feature no profile defines.
    #[test]
    fn provides_is_checked_against_the_patch_and_the_profile() {
        let p = Profile::parse(&live(), Path::new("ggml.toml")).unwrap();
        let reads = "string(REPLACE \",\" \";\" v \"${LLAMA_FORGE_CPU_VARIANTS}\")";
        assert_eq!(
            check_provides(&[patch(reads, &[Feature::CpuVariants])], Some(&p)),
            Ok(())
        );
        // A comment that names the define is not a read.
        assert_eq!(
            check_provides(&[patch("# see LLAMA_FORGE_CUDA_GROUPS", &[])], Some(&p)),
            Ok(())
        );
        let e = check_provides(&[patch(reads, &[])], Some(&p)).unwrap_err();
        assert!(
            e.contains("patch `p` reads LLAMA_FORGE_CPU_VARIANTS but does not say so: add `provides = [\"cpu-variants\"]`"),
            "{e}"
        );
        let e = check_provides(&[patch("nothing", &[Feature::CudaGroups])], Some(&p)).unwrap_err();
        assert!(
            e.contains("provides `cuda-groups` but its replace text for ggml/src/CMakeLists.txt does not read LLAMA_FORGE_CUDA_GROUPS"),
            "{e}"
        );
        let e = check_provides(&[patch(reads, &[Feature::CpuVariants])], None).unwrap_err();
        assert!(
            e.contains("provides `cpu-variants`, which the recipe's profile does not define"),
            "{e}"
        );
        // The tool's own feature needs no profile.
        let rt = patch(
            "\"${LLAMA_FORGE_CXX_RUNTIME}\"",
            &[Feature::SharedCxxRuntime],
        );
        assert_eq!(check_provides(&[rt], None), Ok(()));
    }
}
