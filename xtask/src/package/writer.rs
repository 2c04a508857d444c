//! The artifact formats behind one trait. `package/mod.rs` collects a payload and
//! makes the manifest; an [`ArtifactWriter`] turns them into the artifact's bytes:
//! a wheel (zip with `.dist-info`) or an archive (`.tar.gz` with one top dir). A
//! Windows zip archive is one more writer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

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
    metadata.insert(writer.manifest_name().into(), m.embedded().to_json());
    let path = writer.write(out, payload, &metadata, epoch)?;
    crate::package::finish(path, m)
}
