//! The manifests: the one inside the artifact, the one beside it, and RECORD, against what the artifact holds.

use super::*;

pub(super) fn check_manifests(
    path: &Path,
    name: &str,
    files: &Files,
    m: &Manifest,
    r: &mut Report,
) -> Result<()> {
    if m.artifact.filename != name {
        r.problem(format!(
            "manifest is for {}, not {name}",
            m.artifact.filename
        ));
    }
    let planned = m.plan.hash();
    if planned != m.plan_hash {
        r.problem(format!("the manifest's plan hashes to {planned}, but its plan_hash is {}: the manifest was edited", m.plan_hash));
    }
    let actual: BTreeMap<String, FileEntry> = files
        .iter()
        .map(|(p, s)| {
            (
                p.clone(),
                FileEntry {
                    size: s.size,
                    sha256: s.sha256(),
                },
            )
        })
        .collect();
    for (p, e) in &actual {
        match m.files.get(p) {
            None => r.problem(format!("{}: not in the manifest", shown(p))),
            Some(want) if want != e => r.problem(format!(
                "{p}: sha256 {} differs from the manifest's {}",
                e.sha256, want.sha256
            )),
            _ => {}
        }
    }
    for p in m.files.keys().filter(|p| !actual.contains_key(*p)) {
        r.problem(format!("{p}: in the manifest but not in the artifact"));
    }
    let external = path.with_file_name(format!("{name}.manifest.json"));
    if fs_err::symlink_metadata(&external).is_err() {
        r.warnings.push(format!(
            "no {} beside it: the artifact's sha256 was checked against nothing independent (the manifest inside came with \
             the artifact: whoever changed one could change both); put the manifest published with it beside it and run verify again",
            external.display()
        ));
        return Ok(());
    }
    // A regular file of at most manifest::MAX_BYTES (not a FIFO or a device, nor a link
    // to one): else a problem that says what it is.
    let ext = match Manifest::read(&external) {
        Ok(m) => m,
        Err(e) => {
            r.problem(format!("{e:#}"));
            return Ok(());
        }
    };
    let sha = crate::digest::sha256_file(path)?;
    if ext.artifact.sha256.as_ref() != Some(&sha) {
        r.problem(format!(
            "sha256 {sha} differs from {}'s {}",
            external.display(),
            ext.artifact
                .sha256
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_else(|| "(none)".into())
        ));
    }
    let actual = fs_err::metadata(path)?.len();
    if ext.artifact.size != Some(actual) {
        r.problem(format!(
            "size {actual} differs from {}'s {}",
            external.display(),
            ext.artifact
                .size
                .map(|s| s.to_string())
                .unwrap_or_else(|| "(none)".into())
        ));
    }
    if ext.embedded() != *m {
        r.problem(format!(
            "{} and the manifest inside the artifact differ",
            external.display()
        ));
    }
    Ok(())
}
