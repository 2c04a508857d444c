//! The manifest: how an artifact was made, as JSON with stable key order.
//!
//! One copy sits beside the artifact (`<artifact>.manifest.json`, with the
//! artifact's own sha256); an identical copy minus that field is inside it
//! (`.dist-info/llama-forge.json` in wheels, `manifest.json` in archives).
//!
//! Schema 2 carries the whole plan (`plan`), so `cargo xtask reproduce` can
//! rebuild from a manifest alone; schema 1 manifests did not, and are refused.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hex;
use crate::package::elf::ElfInfo;
use crate::plan::{Plan, PlannedSource, ToolRecord};
use crate::recipe::ArtifactKind;
use crate::versions::Version;

pub const SCHEMA: u32 = 2;
/// The manifest's file name inside a wheel's `.dist-info`.
pub const WHEEL_NAME: &str = "llama-forge.json";
/// The manifest's file name inside an archive's top dir.
pub const ARCHIVE_NAME: &str = "manifest.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: u32,
    pub tool: ToolInfo,
    pub recipe: String,
    pub version: Version,
    pub upstream: Option<String>,
    pub artifact: ArtifactInfo,
    /// sha256 of the plan JSON (`cargo xtask plan ... --json`).
    pub plan_hash: Sha256Hex,
    pub source: PlannedSource,
    pub source_date_epoch: u64,
    pub toolchains: BTreeMap<String, ToolRecord>,
    pub target: TargetInfo,
    /// Every CMake define given, with its reason.
    pub cmake_defines: BTreeMap<String, Defined>,
    /// The compiler flags CMake ended with (CMakeCache.txt), placeholders kept.
    pub compiler_flags: BTreeMap<String, String>,
    /// The whole environment of the build commands.
    pub env: BTreeMap<String, String>,
    /// Every file in the artifact (this manifest excepted), by path.
    pub files: BTreeMap<String, FileEntry>,
    /// What each ELF file in the artifact needs.
    pub binaries: BTreeMap<String, ElfInfo>,
    /// GPU builds: nvcc, arch policy outcome, host compiler policy and waivers,
    /// runtime, minimum driver.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cuda: Option<crate::plan::cuda::PlannedCuda>,
    /// GPU builds: what cuobjdump found in each library (SASS and PTX targets).
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub cuda_code: BTreeMap<String, Vec<String>>,
    /// The whole plan the artifact was built from (`plan_hash` is its sha256):
    /// what `reproduce` rebuilds, and compares with the plan made on its machine.
    pub plan: Plan,
    /// `--launcher`: which compile cache ran. Only in the copy beside the
    /// artifact: it does not change the artifact's bytes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub launcher: Option<crate::plan::launcher::Launcher>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactInfo {
    pub kind: ArtifactKind,
    pub filename: String,
    /// Only in the copy beside the artifact: a file cannot hold its own hash.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sha256: Option<Sha256Hex>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub accelerator: crate::plan::target::Accelerator,
    pub cpu_baseline: crate::plan::target::CpuBaseline,
    /// The platform tag the artifact's libraries meet (`manylinux_2_34_x86_64`), for
    /// archives too.
    pub platform: crate::package::tags::PlatformTag,
    /// Wheel tag (`cp311-cp311-manylinux_2_34_x86_64`), wheels only.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub wheel_tag: Option<crate::package::tags::WheelTag>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Defined {
    pub value: String,
    pub reason: String,
    pub origin: crate::plan::SettingOrigin,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub size: u64,
    pub sha256: Sha256Hex,
}

impl Manifest {
    /// The parts that come straight from the plan.
    pub fn from_plan(
        plan: &Plan,
        artifact: ArtifactInfo,
        target: TargetInfo,
        compiler_flags: BTreeMap<String, String>,
    ) -> Manifest {
        let t = &plan.tools;
        let mut toolchains: BTreeMap<String, ToolRecord> = [
            ("cmake", &t.cmake),
            ("ninja", &t.ninja),
            ("cc", &t.cc),
            ("cxx", &t.cxx),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
        if let Some(p) = &t.patchelf {
            toolchains.insert("patchelf".into(), p.clone());
        }
        if let Some(c) = &plan.cuda {
            toolchains.insert("nvcc".into(), c.nvcc.clone());
            if let Some(o) = &c.cuobjdump {
                toolchains.insert("cuobjdump".into(), o.clone());
            }
        }
        Manifest {
            schema: SCHEMA,
            tool: ToolInfo::this(),
            recipe: plan.recipe.clone(),
            version: plan.version.clone(),
            upstream: plan.upstream.clone(),
            artifact,
            plan_hash: plan.hash(),
            source: plan.source.clone(),
            source_date_epoch: plan.source_date_epoch,
            toolchains,
            target,
            cmake_defines: plan
                .defines
                .iter()
                .map(|d| {
                    (
                        d.name.clone(),
                        Defined {
                            value: d.value.clone(),
                            reason: d.reason.clone(),
                            origin: d.origin.clone(),
                        },
                    )
                })
                .collect(),
            compiler_flags,
            env: plan
                .env
                .iter()
                .map(|e| (e.name.clone(), e.value.clone()))
                .collect(),
            files: BTreeMap::new(),
            binaries: BTreeMap::new(),
            cuda: plan.recorded().cuda,
            cuda_code: BTreeMap::new(),
            plan: plan.recorded(),
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
        let r = crate::recipe::fixture("llama.cpp");
        let o = crate::plan::tests::opts(&[]);
        let plan = crate::plan::make(
            &r,
            r.release(None).unwrap(),
            &crate::plan::tests::fake_tools(&o.cache),
            &o,
        )
        .unwrap();
        let artifact = ArtifactInfo {
            kind: ArtifactKind::Archive,
            filename: "x.tar.gz".into(),
            sha256: None,
            size: None,
        };
        let target = TargetInfo {
            accelerator: crate::plan::target::Accelerator::Cpu,
            cpu_baseline: crate::plan::target::CpuBaseline::V2,
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
        v["schema"] = 3.into();
        let e = Manifest::parse(&serde_json::to_vec(&v).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("schema 3 is not supported"), "{e}");
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
        insta::assert_snapshot!("schema_99", msg(99.into()));
        insta::assert_snapshot!("schema_missing", msg(serde_json::Value::Null));
    }
}
