//! The manifest: how an artifact was made, as JSON with stable key order.
//!
//! One copy sits beside the artifact (`<artifact>.manifest.json`, with the
//! artifact's own sha256); an identical copy minus that field is inside it
//! (`.dist-info/llama-forge.json` in wheels, `manifest.json` in archives).
//!
//! Schema 3 is the whole plan (`plan`, hashed: `plan_hash`) plus facts about the
//! artifact, so `cargo xtask reproduce` can rebuild from a manifest alone and `verify`
//! checks against what the hash covers. Schema 1 had no plan; schema 2 copied parts of
//! the plan beside it, unhashed. Both are refused by name.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hex;
use crate::package::elf::ElfInfo;
use crate::plan::Plan;
use crate::recipe::ArtifactKind;

pub const SCHEMA: u32 = 3;
/// The manifest's file name inside a wheel's `.dist-info`.
pub const WHEEL_NAME: &str = "llama-forge.json";
/// The manifest's file name inside an archive's top dir.
pub const ARCHIVE_NAME: &str = "manifest.json";

/// Schema 3: the hashed plan, and facts about the artifact that the plan cannot know
/// (its files, what its binaries need, its device code, the flags CMake ended with).
/// Nothing of the plan is copied beside it: every reader (`verify`, `reproduce`,
/// `release`) reads `plan`, which `plan_hash` covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub schema: u32,
    pub tool: ToolInfo,
    pub artifact: ArtifactInfo,
    /// sha256 of the plan JSON (`cargo xtask plan ... --json`).
    pub plan_hash: Sha256Hex,
    /// The whole plan the artifact was built from (`plan_hash` is its sha256):
    /// what `reproduce` rebuilds, and compares with the plan made on its machine.
    pub plan: Plan,
    /// The platform the artifact's binaries meet, and its wheel tag.
    pub target: TargetInfo,
    /// The compiler flags CMake ended with (CMakeCache.txt), placeholders kept.
    pub compiler_flags: BTreeMap<String, String>,
    /// Every file in the artifact (this manifest excepted), by path.
    pub files: BTreeMap<String, FileEntry>,
    /// What each ELF file in the artifact needs.
    pub binaries: BTreeMap<String, ElfInfo>,
    /// GPU builds: what the gate found in each library (SASS and PTX targets, read from `.nv_fatbin`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub cuda_code: BTreeMap<String, Vec<String>>,
    /// `--launcher`: which compile cache ran. Only in the copy beside the
    /// artifact: it does not change the artifact's bytes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub launcher: Option<crate::plan::launcher::Launcher>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

impl ToolInfo {
    pub fn this() -> ToolInfo {
        ToolInfo {
            name: "llama-forge (cargo xtask)".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArtifactInfo {
    pub kind: ArtifactKind,
    pub filename: String,
    /// Only in the copy beside the artifact: a file cannot hold its own hash.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sha256: Option<Sha256Hex>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetInfo {
    /// The platform tag the artifact's libraries meet (`manylinux_2_34_x86_64`), for
    /// archives too.
    pub platform: crate::package::tags::PlatformTag,
    /// Wheel tag (`cp311-cp311-manylinux_2_34_x86_64`), wheels only.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub wheel_tag: Option<crate::package::tags::WheelTag>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileEntry {
    pub size: u64,
    pub sha256: Sha256Hex,
}

impl Manifest {
    /// A manifest of `plan`, with no facts about the artifact yet.
    pub fn from_plan(
        plan: &Plan,
        artifact: ArtifactInfo,
        target: TargetInfo,
        compiler_flags: BTreeMap<String, String>,
    ) -> Manifest {
        Manifest {
            schema: SCHEMA,
            tool: ToolInfo::this(),
            artifact,
            plan_hash: plan.hash(),
            plan: plan.recorded(),
            target,
            compiler_flags,
            files: BTreeMap::new(),
            binaries: BTreeMap::new(),
            cuda_code: BTreeMap::new(),
            launcher: plan.launcher.clone(),
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("manifest serialises");
        v.push(b'\n');
        v
    }

    pub fn read(path: &Path) -> Result<Manifest> {
        let text = fs_err::read(path)
            .with_context(|| format!("cannot read manifest {}", path.display()))?;
        Self::parse(&text)
            .with_context(|| format!("{} is not a manifest this tool can read", path.display()))
    }

    /// Parses a manifest of this schema; any other schema is refused by name
    /// before its fields are looked at.
    pub fn parse(data: &[u8]) -> Result<Manifest> {
        let v: serde_json::Value = serde_json::from_slice(data).context("not JSON")?;
        match v.get("schema").and_then(|s| s.as_u64()) {
            Some(s) if s == u64::from(SCHEMA) => {}
            Some(2) => anyhow::bail!(
                "manifest schema 2 is not supported: this tool reads schema {SCHEMA}, where the manifest holds the build plan once, under its hash (schema 2 also copied parts of it beside, unhashed); rebuild the artifact with this version, or use the llama-forge that wrote it"
            ),
            Some(1) => anyhow::bail!(
                "manifest schema 1 is not supported: this tool reads schema {SCHEMA}, which records the whole build plan (schema 1 manifests lack it, so they cannot be checked or rebuilt); rebuild the artifact with this version"
            ),
            Some(s) => anyhow::bail!("manifest schema {s} is not supported: this tool reads schema {SCHEMA} (a newer llama-forge wrote it?)"),
            None => anyhow::bail!("no `schema` number: not a llama-forge manifest"),
        }
        serde_json::from_value(v).context("malformed manifest")
    }

    /// The same manifest without the artifact's own hash and size (the copy inside it).
    pub fn embedded(&self) -> Manifest {
        let mut m = self.clone();
        m.artifact.sha256 = None;
        m.artifact.size = None;
        m.launcher = None;
        m
    }
}

/// Reads the compiler and linker flags CMake settled on from `CMakeCache.txt`,
/// with the work dir's paths turned back into placeholders.
pub fn flags_from_cache(
    cache_txt: &str,
    unresolve: &dyn Fn(&str) -> String,
) -> BTreeMap<String, String> {
    let wanted = [
        "CMAKE_C_FLAGS",
        "CMAKE_C_FLAGS_RELEASE",
        "CMAKE_CXX_FLAGS",
        "CMAKE_CXX_FLAGS_RELEASE",
        "CMAKE_SHARED_LINKER_FLAGS",
        "CMAKE_EXE_LINKER_FLAGS",
        "CMAKE_CUDA_FLAGS",
        "CMAKE_CUDA_FLAGS_RELEASE",
        "CMAKE_CUDA_ARCHITECTURES",
    ];
    let mut out = BTreeMap::new();
    for line in cache_txt.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let Some((name, _ty)) = key.split_once(':') else {
            continue;
        };
        if wanted.contains(&name) {
            out.insert(name.to_string(), unresolve(value));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        let plan = crate::plan::tests::fixture_plan("llama.cpp", &[]);
        let artifact = ArtifactInfo {
            kind: ArtifactKind::Archive,
            filename: "x.tar.gz".into(),
            sha256: None,
            size: None,
        };
        let target = TargetInfo {
            platform: "linux_x86_64".parse().unwrap(),
            wheel_tag: None,
        };
        Manifest::from_plan(&plan, artifact, target, BTreeMap::new())
    }

    #[test]
    fn carries_the_whole_plan_and_round_trips() {
        let m = manifest();
        assert_eq!(m.plan.hash(), m.plan_hash);
        assert_eq!(Manifest::parse(&m.to_json()).unwrap(), m);
    }

    #[test]
    fn other_schemas_are_refused_by_name() {
        let mut v: serde_json::Value = serde_json::from_slice(&manifest().to_json()).unwrap();
        v["schema"] = 1.into();
        let e = Manifest::parse(&serde_json::to_vec(&v).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("schema 1 is not supported") && e.contains("rebuild"),
            "{e}"
        );
        v["schema"] = 2.into();
        let e = Manifest::parse(&serde_json::to_vec(&v).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("schema 2 is not supported") && e.contains("rebuild"),
            "{e}"
        );
        v["schema"] = 4.into();
        let e = Manifest::parse(&serde_json::to_vec(&v).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("schema 4 is not supported"), "{e}");
        let e = Manifest::parse(b"{\"recipe\": \"x\"}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a llama-forge manifest"), "{e}");
    }

    #[test]
    fn unsupported_schema_messages() {
        let msg = |schema: serde_json::Value| {
            format!(
                "{:#}",
                Manifest::parse(
                    &serde_json::to_vec(&serde_json::json!({ "schema": schema })).unwrap()
                )
                .unwrap_err()
            )
        };
        insta::assert_snapshot!("schema_1", msg(1.into()));
        insta::assert_snapshot!("schema_2", msg(2.into()));
        insta::assert_snapshot!("schema_99", msg(99.into()));
        insta::assert_snapshot!("schema_missing", msg(serde_json::Value::Null));
    }

    /// A field beside the plan (schema 2 copied `cuda`, `source`, `env` ... there, where
    /// no hash covered them) is refused: nothing a reader trusts lives outside `plan`.
    #[test]
    fn fields_beside_the_plan_are_refused() {
        let mut v: serde_json::Value = serde_json::from_slice(&manifest().to_json()).unwrap();
        v["cuda"] = serde_json::json!({"architectures": "120a-real"});
        let e = format!(
            "{:#}",
            Manifest::parse(&serde_json::to_vec(&v).unwrap()).unwrap_err()
        );
        assert!(e.contains("unknown field `cuda`"), "{e}");
    }

    /// The JSON schema of the manifest (schema 3), generated from the types: any change
    /// to what a manifest holds shows up in this snapshot, and one that old readers
    /// would misread needs a new `SCHEMA` number.
    #[test]
    fn json_schema() {
        insta::assert_json_snapshot!("manifest_json_schema", schemars::schema_for!(Manifest));
    }
}
