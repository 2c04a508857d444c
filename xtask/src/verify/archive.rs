//! Archives (.tar.gz, .zip): the one top dir and the entries under it.

use super::*;

pub(super) fn verify_archive(
    path: &Path,
    stem: &str,
    zip: bool,
    limits: &Limits,
    col: &mut Collector,
    r: &mut Report,
) -> Result<(Files, Option<Manifest>)> {
    let top = format!("{stem}/");
    let mut names = BTreeSet::new();
    let mut files: Files = BTreeMap::new();
    let mut index = 0usize;
    let mut top_entries = Vec::new();
    let mut each = |head: &Head, data: &mut dyn Read| -> Result<()> {
        index += 1;
        check_name(head, r);
        let n = shown(&head.name);
        if head.kind == EntryKind::Dir && (head.name == top || head.name == stem) {
            top_entries.push(index);
            return Ok(());
        }
        let Some(rel) = head.name.strip_prefix(&top) else {
            r.problem(format!(
                "{n}: outside the top dir {top}: an archive holds one dir, named after it"
            ));
            return Ok(());
        };
        if !names.insert(rel.trim_end_matches('/').to_string()) {
            r.problem(format!("{}: stored twice in the archive", shown(rel)));
        }
        match &head.kind {
            EntryKind::File => {
                let seen = col.take(rel, rel == manifest::ARCHIVE_NAME, data)?;
                files.insert(rel.to_string(), seen);
            }
            EntryKind::Dir => {}
            k => {
                let to = head
                    .link
                    .as_ref()
                    .map(|l| format!(" to {}", shown(l)))
                    .unwrap_or_default();
                r.problem(format!("{n}: a {k} entry{to}: an archive holds regular files only, and unpacking it would create it"));
            }
        }
        Ok(())
    };
    if zip {
        let listing = crate::package::wheel::stream_entries(path, limits, &mut each)?;
        check_central_directory(&listing, r);
    } else {
        crate::package::archive::stream_entries(path, limits, &mut each)?;
    }
    check_top_dir(&top, &top_entries, !zip, r);
    let embedded = match files.remove(manifest::ARCHIVE_NAME) {
        Some(Seen { text: Some(d), .. }) => match Manifest::parse(&d) {
            Ok(m) => Some(m),
            Err(e) => {
                r.problem(format!("{}: {e}", manifest::ARCHIVE_NAME));
                None
            }
        },
        Some(_) => {
            r.problem(format!(
                "{} is over {} MiB: not read",
                manifest::ARCHIVE_NAME,
                KEEP_MAX >> 20
            ));
            None
        }
        None => None,
    };
    Ok((files, embedded))
}

/// An archive holds one top dir, named after it: its entry at most once (a
/// second one is what a tar that readers split differently shows the `tar` crate)
/// and, in a tar, which this tool writes with it, first and exactly once.
/// `at`: the top dir entries' positions, from 1.
pub(super) fn check_top_dir(top: &str, at: &[usize], tar: bool, r: &mut Report) {
    if at.len() > 1 {
        r.problem(format!(
            "{top}: the top dir is stored {} times (entries {}): an archive holds one top dir",
            at.len(),
            at.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    match at.first() {
        None if tar => r.problem(format!(
            "no entry for the top dir {top}: an archive of this tool starts with it, and holds everything under it"
        )),
        Some(&i) if tar && i != 1 => r.problem(format!(
            "{top}: the top dir is entry {i}, not the first: an archive of this tool starts with it"
        )),
        _ => {}
    }
}
