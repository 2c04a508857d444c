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

use crate::binary::elf::ElfInfo;
use crate::digest::Sha256Hex;
use crate::plan::Plan;
use crate::recipe::ArtifactKind;

pub const SCHEMA: u32 = 3;
/// The manifest's file name inside a wheel's `.dist-info`.
pub const WHEEL_NAME: &str = "llama-forge.json";
/// The manifest's file name inside an archive's top dir.
pub const ARCHIVE_NAME: &str = "manifest.json";

/// The most a manifest may hold. A real one is well under 1 MiB (the plan, and a line
/// per file of the artifact); JSON costs many times its size in memory when parsed, so a
/// larger file is refused before it is read.
pub const MAX_BYTES: u64 = 4 << 20;

/// The bytes of the manifest file at `path` (`<artifact>.manifest.json`, a package's
/// `llama-forge.json`), read as untrusted input: a regular file only (never a FIFO, a
/// device or a link to one: [`open_regular`]), of at most [`MAX_BYTES`].
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    read_capped(path, MAX_BYTES, "a manifest")
}

pub use crate::bounded::{not_readable, open_regular, read_capped};

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
    /// The commit the tool was built from (`git rev-parse --short=12`), and whether its
    /// tree had changes then. Only in the copy beside the artifact, as `launcher`: two
    /// commits that make the same plan make the same bytes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dirty: Option<bool>,
}

impl ToolInfo {
    pub fn this() -> ToolInfo {
        let commit = env!("LLAMA_FORGE_COMMIT");
        ToolInfo {
            name: "llama-forge (cargo xtask)".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            commit: (commit != "unknown").then(|| commit.to_string()),
            dirty: match env!("LLAMA_FORGE_DIRTY") {
                "yes" => Some(true),
                "no" => Some(false),
                _ => None,
            },
        }
    }

    /// Without the commit and dirty flag: what the copy inside the artifact records.
    pub fn embedded(&self) -> ToolInfo {
        ToolInfo {
            commit: None,
            dirty: None,
            ..self.clone()
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
    pub platform: crate::tags::PlatformTag,
    /// Wheel tag (`cp311-cp311-manylinux_2_34_x86_64`), wheels only.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub wheel_tag: Option<crate::tags::WheelTag>,
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

    /// Reads the manifest file at `path`: a regular file of at most [`MAX_BYTES`]
    /// (see [`read_bytes`]), every manifest read from disk goes through here.
    pub fn read(path: &Path) -> Result<Manifest> {
        let text = read_bytes(path)?;
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

    /// The same manifest without the artifact's own hash and size (the copy inside it),
    /// and without where a local source lay on the building machine (what the plan hash
    /// leaves out: the same tree elsewhere builds the same bytes).
    pub fn embedded(&self) -> Manifest {
        let mut m = self.clone();
        m.plan.source.unlocate();
        m.artifact.sha256 = None;
        m.artifact.size = None;
        m.launcher = None;
        m.tool = m.tool.embedded();
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

    /// A manifest file is read only from a regular file of at most MAX_BYTES: a FIFO
    /// (which would wait for a writer forever), a link to /dev/zero (which never ends)
    /// and a sparse 60 MB file are refused by name, before anything is read.
    #[cfg(unix)]
    #[test]
    fn a_manifest_file_is_a_small_regular_file() {
        let d = tempfile::tempdir().unwrap();
        let good = d.path().join("x.tar.gz.manifest.json");
        fs_err::write(&good, manifest().to_json()).unwrap();
        assert_eq!(Manifest::read(&good).unwrap(), manifest());

        let fifo = d.path().join("fifo.manifest.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let zero = d.path().join("zero.manifest.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let dir = d.path().join("dir.manifest.json");
        fs_err::create_dir(&dir).unwrap();
        for (p, kind) in [
            (&fifo, "a FIFO (named pipe)"),
            (&zero, "a character device"),
            (&dir, "a directory"),
        ] {
            let e = format!("{:#}", Manifest::read(p).unwrap_err());
            assert!(
                e.contains(&format!("{} is {kind}, not a regular file", p.display()))
                    && e.contains("give the file itself"),
                "{e}"
            );
        }

        // A missing file in plain words, with the path and what to do: not the I/O
        // library's "failed to query resolved metadata".
        let missing = d.path().join("missing.manifest.json");
        let e = format!("{:#}", Manifest::read(&missing).unwrap_err());
        assert!(
            e.starts_with(&format!(
                "no such file or directory: {}: check the path",
                missing.display()
            )) && !e.contains("metadata")
                && !e.contains("os error"),
            "{e}"
        );

        let big = d.path().join("big.manifest.json");
        fs_err::File::create(&big)
            .unwrap()
            .set_len(60_000_000)
            .unwrap();
        let e = format!("{:#}", Manifest::read(&big).unwrap_err());
        assert!(
            e.contains(&format!(
                "{} is 60000000 bytes, over the 4 MiB a manifest may hold",
                big.display()
            )),
            "{e}"
        );
    }

    /// The JSON schema of the manifest (schema 3), generated from the types: any change
    /// to what a manifest holds shows up in this snapshot, and one that old readers
    /// would misread needs a new `SCHEMA` number.
    #[test]
    fn json_schema() {
        insta::assert_json_snapshot!("manifest_json_schema", schemars::schema_for!(Manifest));
    }
}
