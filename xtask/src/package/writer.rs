//! The artifact formats behind one trait. `package/mod.rs` collects a payload and
//! makes the manifest; an [`ArtifactWriter`] turns them into the artifact's bytes:
//! a wheel (zip with `.dist-info`) or an archive (`.tar.gz` with one top dir). A
//! Windows zip archive is one more writer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::manifest::{self, FileEntry, Manifest};
use crate::package::payload::Payload;
use crate::package::Artifact;
use crate::tags::WheelFilename;

pub trait ArtifactWriter {
    /// The artifact's file name.
    fn filename(&self) -> String;
    /// The metadata files written beside the payload (the manifest excepted), by name.
    fn metadata(&self) -> BTreeMap<String, Vec<u8>>;
    /// A metadata file's path inside the artifact, as the manifest's `files` names it.
    fn metadata_path(&self, name: &str) -> String;
    /// The manifest's name among the metadata files.
    fn manifest_name(&self) -> &'static str;
    /// The entry's name a file of the manifest's `files` is stored under.
    fn entry_name(&self, path: &str) -> String {
        path.to_string()
    }
    /// Writes the payload, then the metadata, as `out/<filename>` (through a temp file
    /// renamed when complete), with every timestamp `epoch`. Returns its path.
    fn write(
        &self,
        out: &Path,
        payload: &Payload,
        metadata: &BTreeMap<String, Vec<u8>>,
        epoch: u64,
    ) -> Result<PathBuf>;
}

/// A wheel: `metadata` is its `.dist-info` (METADATA, WHEEL, licenses, entry points).
pub struct Wheel {
    pub name: WheelFilename,
    pub dist_info: BTreeMap<String, Vec<u8>>,
}

impl ArtifactWriter for Wheel {
    fn filename(&self) -> String {
        self.name.to_string()
    }
    fn metadata(&self) -> BTreeMap<String, Vec<u8>> {
        self.dist_info.clone()
    }
    fn metadata_path(&self, name: &str) -> String {
        format!("{}/{name}", self.name.dist_info_dir())
    }
    fn manifest_name(&self) -> &'static str {
        manifest::WHEEL_NAME
    }
    fn write(
        &self,
        out: &Path,
        payload: &Payload,
        metadata: &BTreeMap<String, Vec<u8>>,
        epoch: u64,
    ) -> Result<PathBuf> {
        crate::package::wheel::write(out, &self.name, payload, metadata, epoch)
    }
}

/// A binary archive, `<stem>.tar.gz` (or `.zip` for Windows) with everything under `<stem>/`.
pub struct Archive {
    pub stem: String,
    pub format: crate::plan::ArchiveFormat,
}

impl ArtifactWriter for Archive {
    fn filename(&self) -> String {
        format!("{}{}", self.stem, self.format.extension())
    }
    fn metadata(&self) -> BTreeMap<String, Vec<u8>> {
        BTreeMap::new()
    }
    fn metadata_path(&self, name: &str) -> String {
        name.to_string()
    }
    fn manifest_name(&self) -> &'static str {
        manifest::ARCHIVE_NAME
    }
    fn entry_name(&self, path: &str) -> String {
        format!("{}/{path}", self.stem)
    }
    fn write(
        &self,
        out: &Path,
        payload: &Payload,
        metadata: &BTreeMap<String, Vec<u8>>,
        epoch: u64,
    ) -> Result<PathBuf> {
        let extra: Vec<(String, Vec<u8>)> = metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match self.format {
            crate::plan::ArchiveFormat::TarGz => {
                crate::package::archive::write(out, &self.stem, payload, &extra, epoch)
            }
            crate::plan::ArchiveFormat::Zip => {
                crate::package::archive::write_zip(out, &self.stem, payload, &extra, epoch)
            }
        }
    }
}

/// Writes one artifact: the manifest lists the payload and the metadata files, goes
/// inside the artifact (without its own hash), and is written beside it (with it).
pub fn emit(
    writer: &dyn ArtifactWriter,
    out: &Path,
    payload: &Payload,
    mut m: Manifest,
    epoch: u64,
) -> Result<Artifact> {
    let mut metadata = writer.metadata();
    m.files = payload.entries();
    for (name, data) in &metadata {
        m.files.insert(
            writer.metadata_path(name),
            FileEntry {
                size: data.len() as u64,
                sha256: crate::digest::sha256_bytes(data),
            },
        );
    }
    let manifest_path = writer.metadata_path(writer.manifest_name());
    let stored: Vec<String> = m
        .files
        .keys()
        .chain([&manifest_path])
        .map(|p| writer.entry_name(p))
        .collect();
    let bad = crate::portable::problems(stored.iter().map(String::as_str));
    if !bad.is_empty() {
        bail!(
            "{}: names that are not one file on every OS (Windows and macOS refuse or merge them; pip stops half-way there), so it was not written:\n  {}",
            writer.filename(),
            bad.join("\n  ")
        );
    }
    metadata.insert(writer.manifest_name().into(), m.embedded().to_json());
    let path = writer.write(out, payload, &metadata, epoch)?;
    crate::package::finish(path, m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{ArtifactInfo, TargetInfo};

    /// The writer stores no name that is not one file on every OS: case twins (the
    /// archive's top dir included in the comparison) and device names are refused, each
    /// named, before anything is written; fine names are written.
    #[test]
    fn names_that_are_not_one_file_everywhere_are_not_written() {
        let plan = crate::plan::tests::fixture_plan("llama.cpp", &[]);
        let d = tempfile::tempdir().unwrap();
        let writer = Archive {
            stem: "llama.cpp-test".into(),
            format: crate::plan::ArchiveFormat::TarGz,
        };
        let manifest = || {
            Manifest::from_plan(
                &plan,
                ArtifactInfo {
                    kind: crate::recipe::ArtifactKind::Archive,
                    filename: writer.filename(),
                    sha256: None,
                    size: None,
                },
                TargetInfo {
                    platform: "linux_x86_64".parse().unwrap(),
                    wheel_tag: None,
                },
                BTreeMap::new(),
            )
        };
        let mut bad = Payload::default();
        for p in ["lib/Lib.so", "lib/lib.so", "bin/aux.dll", "bin/llama-cli"] {
            bad.add(p.into(), b"x".to_vec(), false).unwrap();
        }
        let e = format!(
            "{:#}",
            emit(&writer, d.path(), &bad, manifest(), 0)
                .map(|a| a.path)
                .unwrap_err()
        );
        assert!(
            e.contains("llama.cpp-test.tar.gz: names that are not one file on every OS"),
            "{e}"
        );
        assert!(e.contains("llama.cpp-test/lib/lib.so: collides with `llama.cpp-test/lib/Lib.so` on a case-insensitive file system"), "{e}");
        assert!(
            e.contains(
                "llama.cpp-test/bin/aux.dll: its component `aux.dll` is a Windows device name"
            ),
            "{e}"
        );
        assert!(!e.contains("llama-cli"), "{e}");
        assert_eq!(
            fs_err::read_dir(d.path()).unwrap().count(),
            0,
            "nothing written"
        );

        let mut good = Payload::default();
        good.add("bin/llama-cli".into(), b"x".to_vec(), true)
            .unwrap();
        good.add("lib/libggml.so".into(), b"y".to_vec(), false)
            .unwrap();
        let a = emit(&writer, d.path(), &good, manifest(), 0).unwrap();
        assert!(a.path.is_file());
    }
}
