//! Archives (.tar.gz, .zip): the one top dir and the entries under it.

use super::*;

pub(super) fn verify_archive(
    path: &Path,
    stem: &str,
    zip: bool,
    limits: &Limits,
    col: &mut Collector,
    r: &mut Report,
) -> Result<Found> {
    let top = format!("{stem}/");
    let mut names = BTreeSet::new();
    let mut files: Files = BTreeMap::new();
    // Anyone else's archive need not hold one top dir named after it.
    let (mut outside_names, mut theirs) = (BTreeSet::new(), Files::new());
    let mut index = 0usize;
    let mut top_entries = Vec::new();
    let mut portable = crate::portable::Names::new();
    let mut each = |head: &Head, data: &mut dyn Read| -> Result<()> {
        index += 1;
        check_name(head, &mut portable, r);
        check_mode(head, !zip, r);
        let n = shown(&head.name);
        if head.kind == EntryKind::Dir && (head.name == top || head.name == stem) {
            top_entries.push(index);
            return Ok(());
        }
        let Some(rel) = head.name.strip_prefix(&top) else {
            r.ours(format!(
                "{n}: outside the top dir {top}: an archive holds one dir, named after it"
            ));
            let whole = head.name.trim_end_matches('/').to_string();
            if !outside_names.insert(whole.clone()) {
                r.problem(format!("{n}: stored twice in the archive"));
            }
            match &head.kind {
                // Read all the same: the size limits hold for every entry.
                EntryKind::File => {
                    theirs.insert(whole.clone(), col.take(&whole, false, data)?);
                }
                EntryKind::Dir => {}
                k => r.problem(other_than_a_file(&n, k, head)),
            }
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
            k => r.problem(other_than_a_file(&n, k, head)),
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
    // `manifest.json` is a common name: it says the archive is this tool's when it reads
    // as its manifest, or as JSON naming a `schema` or `plan_hash`.
    let mut claims = false;
    let embedded = match files.remove(manifest::ARCHIVE_NAME) {
        Some(seen @ Seen { text: Some(_), .. }) => {
            let d = seen.text.as_deref().expect("matched");
            match Manifest::parse(d) {
                Ok(m) => {
                    claims = true;
                    Some(m)
                }
                Err(e) => {
                    let problem = format!("{}: {e}", manifest::ARCHIVE_NAME);
                    let named = serde_json::from_slice::<serde_json::Value>(d)
                        .ok()
                        .and_then(|v| {
                            v.as_object()
                                .map(|o| o.contains_key("schema") || o.contains_key("plan_hash"))
                        })
                        .unwrap_or(false);
                    if named {
                        claims = true;
                        r.problem(problem);
                    } else {
                        r.ours(problem);
                        theirs.insert(manifest::ARCHIVE_NAME.to_string(), seen);
                    }
                    None
                }
            }
        }
        Some(seen) => {
            r.ours(format!(
                "{} is over {} MiB: not read",
                manifest::ARCHIVE_NAME,
                KEEP_MAX >> 20
            ));
            theirs.insert(manifest::ARCHIVE_NAME.to_string(), seen);
            None
        }
        None => None,
    };
    Ok(Found {
        files,
        embedded,
        claims,
        theirs,
    })
}

/// The problem with an entry that is not a regular file or a dir (`n`: its name, shown).
fn other_than_a_file(n: &str, k: &EntryKind, head: &Head) -> String {
    let to = head
        .link
        .as_ref()
        .map(|l| format!(" to {}", shown(l)))
        .unwrap_or_default();
    format!("{n}: a {k} entry{to}: an archive holds regular files only, and unpacking it would create it")
}

/// An archive holds one top dir, named after it: its entry at most once (a
/// second one is what a tar that readers split differently shows the `tar` crate)
/// and, in a tar, which this tool writes with it, first and exactly once.
/// `at`: the top dir entries' positions, from 1.
pub(super) fn check_top_dir(top: &str, at: &[usize], tar: bool, r: &mut Report) {
    if at.len() > 1 {
        r.ours(format!(
            "{top}: the top dir is stored {} times (entries {}): an archive holds one top dir",
            at.len(),
            at.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    match at.first() {
        None if tar => r.ours(format!(
            "no entry for the top dir {top}: an archive of this tool starts with it, and holds everything under it"
        )),
        Some(&i) if tar && i != 1 => r.ours(format!(
            "{top}: the top dir is entry {i}, not the first: an archive of this tool starts with it"
        )),
        _ => {}
    }
}
