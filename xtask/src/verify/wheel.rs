//! Wheels: the zip's central directory, the .dist-info files, and the file name's tags against WHEEL, the manifest and the libraries.

use super::*;

pub(super) fn verify_wheel(
    path: &Path,
    name: &str,
    limits: &Limits,
    col: &mut Collector,
    r: &mut Report,
) -> Result<Found> {
    // The form PEP 427 gives any wheel's name; then the forms this tool writes.
    let any = match name.parse::<crate::tags::AnyWheelFilename>() {
        Ok(a) => Some(a),
        Err(e) => {
            r.problem(format!("filename: {e}"));
            None
        }
    };
    let parsed: Option<WheelFilename> = match name.parse::<WheelFilename>() {
        Ok(w) if w.to_string() == name => Some(w),
        Ok(w) => {
            r.ours(format!(
                "filename does not round-trip through the tag types: {name} reads back as {w}"
            ));
            None
        }
        Err(e) => {
            if any.is_some() {
                r.ours(format!("filename: {e}"));
            }
            None
        }
    };
    let keep = |p: &str| {
        p.ends_with(".dist-info/RECORD")
            || p.ends_with(".dist-info/WHEEL")
            || p.ends_with(".dist-info/METADATA")
            || p.ends_with(".dist-info/entry_points.txt")
            || p.ends_with(&format!(".dist-info/{}", manifest::WHEEL_NAME))
    };
    let mut order = Vec::new();
    let mut dirs = Vec::new();
    let mut files: Files = BTreeMap::new();
    let mut names = crate::portable::Names::new();
    let listing = crate::package::wheel::stream_entries(path, limits, |head, data| {
        order.push(head.name.clone());
        check_name(head, &mut names, r);
        check_mode(head, false, r);
        match head.kind {
            EntryKind::File => {}
            // A symlink's data is its target: hashed like a file, so RECORD still vouches for it.
            EntryKind::Symlink => r.problem(format!(
                "{}: a symlink entry: a wheel holds regular files only",
                shown(&head.name)
            )),
            // Zips of others' tools hold them (setuptools, auditwheel); pip makes the dir.
            EntryKind::Dir => {
                r.ours(format!(
                    "{}: a directory entry: a wheel holds regular files only",
                    shown(&head.name)
                ));
                let bytes = std::io::copy(data, &mut std::io::sink())?;
                if !head.name.ends_with('/') || bytes > 0 {
                    r.problem(format!(
                        "{}: a directory entry {}: zip tools differ on whether they unpack it as a file or a directory",
                        shown(&head.name),
                        if bytes > 0 {
                            format!("with {bytes} bytes of data")
                        } else {
                            "whose name does not end in /".to_string()
                        }
                    ));
                }
                dirs.push(head.name.trim_end_matches('/').to_string());
                return Ok(());
            }
            ref k => {
                r.problem(format!(
                    "{}: a {k} entry: a wheel holds regular files only",
                    shown(&head.name)
                ));
                return Ok(());
            }
        }
        let seen = col.take(&head.name, keep(&head.name), data)?;
        if files.insert(head.name.clone(), seen).is_some() {
            r.problem(format!("{}: stored twice in the zip", shown(&head.name)));
        }
        Ok(())
    })?;
    check_central_directory(&listing, r);
    check_file_or_dir(&files, &dirs, r);
    // The one top-level .dist-info dir (pip refuses a wheel with none or several).
    let infos: BTreeSet<&str> = order
        .iter()
        .filter_map(|p| p.split_once('/').map(|(d, _)| d))
        .filter(|d| d.ends_with(".dist-info"))
        .collect();
    if infos.len() > 1 {
        r.problem(format!(
            "{} .dist-info dirs ({}): pip installs no wheel with more than one",
            infos.len(),
            crate::listed(&infos.iter().map(|d| shown(d)).collect::<Vec<_>>(), "and")
        ));
    }
    let found = infos.iter().next().map(|d| d.to_string());
    if let (Some(a), Some(d)) = (&any, &found) {
        let dist = crate::tags::normalize_distribution(&a.distribution);
        let stem = d.trim_end_matches(".dist-info");
        if !crate::tags::normalize_distribution(stem).starts_with(&dist) {
            r.problem(format!(
                "{}: not the .dist-info dir of {}, the distribution the filename names: pip refuses the wheel",
                shown(d),
                a.distribution
            ));
        }
    }
    let dist_info = match (&parsed, found) {
        (Some(w), _) => w.dist_info_dir(),
        (None, Some(d)) => d,
        (None, None) => String::new(),
    };
    // Where this tool puts its manifest: in a top-level .dist-info dir, whichever. Or a
    // name only this tool gives: a local label `cu135.sm120a` (CUDA release and GPU code;
    // torch's `+cu128` names no GPU), so removing the manifest does not turn one of ours
    // into anyone's wheel, judged by fewer rules.
    let claims = order.iter().any(|p| {
        p.split_once('/')
            .is_some_and(|(d, f)| d.ends_with(".dist-info") && f == manifest::WHEEL_NAME)
    }) || any.as_ref().is_some_and(|a| named_ours(&a.version));
    let record_path = format!("{dist_info}/RECORD");
    match order.last() {
        Some(p) if *p == record_path => {}
        _ => r.ours(format!("{record_path} is not the last entry")),
    }
    let found = |files: Files| Found {
        files,
        embedded: None,
        claims,
        theirs: Files::new(),
    };
    let record = match files.get(&record_path) {
        None => {
            r.problem(format!(
                "{record_path} is missing: pip installs no wheel without it"
            ));
            return Ok(found(files));
        }
        Some(Seen { text: Some(t), .. }) => String::from_utf8_lossy(t).into_owned(),
        Some(_) => {
            r.problem(format!(
                "{record_path} is over {} MiB: not read",
                KEEP_MAX >> 20
            ));
            return Ok(found(files));
        }
    };
    // Signatures of RECORD (PEP 427: RECORD.jws, RECORD.p7s) are not listed in it.
    let signatures = [
        format!("{dist_info}/RECORD.jws"),
        format!("{dist_info}/RECORD.p7s"),
    ];
    let mut listed = BTreeSet::new();
    for (n, line) in record.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let Some([p, hash, size]) = record_row(line) else {
            r.problem(format!(
                "RECORD line {}: malformed (not three comma-separated fields: path, hash, size): {line}",
                n + 1
            ));
            continue;
        };
        listed.insert(p.clone());
        if p == record_path || (signatures.contains(&p) && hash.is_empty()) {
            continue;
        }
        let Some(seen) = files.get(&p) else {
            r.problem(format!("RECORD lists {p}, which is not in the wheel"));
            continue;
        };
        match hash.split_once('=') {
            Some(("sha256", _)) => {
                if hash != crate::package::wheel::record_hash_of(&seen.digest) {
                    r.problem(format!("{p}: sha256 differs from RECORD"));
                }
            }
            // The wheel spec's "sha256 or better": allowed, but verify hashes with sha256 only.
            Some((algo @ ("sha384" | "sha512"), _)) => r.warnings.push(format!(
                "{p}: RECORD gives its {algo}, and verify checks sha256 only: its hash was not checked"
            )),
            Some((algo, _)) => r.problem(format!(
                "{p}: RECORD hashes it with {}: the wheel spec asks for sha256 or better",
                shown(algo)
            )),
            None => r.problem(format!(
                "{p}: RECORD gives no hash for it: every file but RECORD must have one"
            )),
        }
        match size.parse::<u64>() {
            Ok(s) if s == seen.size => {}
            _ if size.is_empty() => r.ours(format!("{p}: RECORD gives no size for it")),
            _ => r.problem(format!(
                "{p}: size {} differs from RECORD's {size}",
                seen.size
            )),
        }
    }
    for p in files.keys() {
        if !listed.contains(p) && !signatures.contains(p) {
            r.problem(format!("{}: in the wheel but not in RECORD", shown(p)));
        }
    }
    if let Some(a) = &any {
        check_wheel_tag(a, &files, r)?;
        check_wheel_file(a, &dist_info, &files, r);
    }
    super::recipe::check_scripts(&dist_info, &files, r);
    let manifest_path = format!("{dist_info}/{}", manifest::WHEEL_NAME);
    let embedded = match files.get(&manifest_path) {
        Some(Seen {
            text: Some(data), ..
        }) => match Manifest::parse(data) {
            Ok(m) => Some(m),
            Err(e) => {
                r.problem(format!("{manifest_path}: {e}"));
                None
            }
        },
        Some(_) => {
            r.problem(format!(
                "{manifest_path} is over {} MiB: not read",
                KEEP_MAX >> 20
            ));
            None
        }
        None => None,
    };
    if let Some(m) = &embedded {
        check_wheel_dirs(&order, &dist_info, m, r);
    }
    if let (Some(w), Some(m)) = (&parsed, &embedded) {
        check_python_tag(w, m, r);
    }
    // The manifest describes everything except itself and RECORD.
    files.remove(&manifest_path);
    files.remove(&record_path);
    Ok(Found {
        files,
        embedded,
        claims,
        theirs: Files::new(),
    })
}

/// One RECORD row's fields, path, hash and size, read as CSV as pip reads them
/// (Python's csv module quotes a field that holds a comma or a quote, `"a,b.py"`, and
/// doubles the quotes in it); None when the row is not three fields.
pub(super) fn record_row(line: &str) -> Option<[String; 3]> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut f = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        f.push('"');
                    }
                    '"' => break,
                    c => f.push(c),
                }
            }
            fields.push(f);
            match chars.next() {
                None => break,
                Some(',') => continue,
                Some(_) => return None,
            }
        }
        let mut more = false;
        for c in chars.by_ref() {
            if c == ',' {
                more = true;
                break;
            }
            f.push(c);
        }
        fields.push(f);
        if !more {
            break;
        }
    }
    fields.try_into().ok()
}

/// No name is both a file and a directory (`a` a file, and `a/` or `a/b` stored too):
/// unpacking stops there, or keeps one of them.
pub(super) fn check_file_or_dir(files: &Files, dirs: &[String], r: &mut Report) {
    for p in files.keys() {
        let mut at = p.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            if files.contains_key(parent) {
                r.problem(format!(
                    "{}: both a file and the dir of {}: unpacking it fails, or keeps one of them",
                    shown(parent),
                    shown(p)
                ));
            }
            at = parent;
        }
    }
    for d in dirs.iter().filter(|d| files.contains_key(*d)) {
        r.problem(format!(
            "{}: both a file and a directory entry: unpacking it fails, or keeps one of them",
            shown(d)
        ));
    }
}

/// Names the zip's central directory holds more than once, or holds but the
/// zip crate does not read (it keeps one entry per name, and no more than the
/// end record counts): pip and unzip may each unpack another copy.
pub(super) fn check_central_directory(listing: &crate::package::wheel::ZipListing, r: &mut Report) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for n in &listing.names {
        *counts.entry(n).or_default() += 1;
    }
    for (n, c) in counts.iter().filter(|(_, c)| **c > 1) {
        r.problem(format!(
            "{}: stored {c} times in the zip's central directory: zip tools unpack one of the copies, not all the same one",
            shown(n)
        ));
    }
    let repeats = listing.names.len() - counts.len();
    if listing.names.len() != listing.read + repeats {
        r.problem(format!(
            "the zip's central directory holds {} entries ({} distinct names), but reads as {}: some zip tools see entries that others do not",
            listing.names.len(),
            counts.len(),
            listing.read
        ));
    }
}

/// Every entry of a wheel is under its package dirs or its `.dist-info`.
pub(super) fn check_wheel_dirs(order: &[String], dist_info: &str, m: &Manifest, r: &mut Report) {
    let mut dirs = vec![dist_info.to_string()];
    if let crate::plan::Package::Wheel {
        packages, lib_dir, ..
    } = &m.plan.package
    {
        dirs.extend(packages.iter().chain([lib_dir]).cloned());
    }
    dirs.retain(|d| !d.is_empty());
    for n in order {
        if !dirs.iter().any(|d| n.starts_with(&format!("{d}/"))) {
            let list: Vec<String> = dirs.iter().map(|d| format!("{d}/")).collect();
            r.problem(format!(
                "{}: outside the wheel's dirs ({}): not part of this package",
                shown(n),
                list.join(", ")
            ));
        }
    }
}

/// The WHEEL file's `Tag:` lines are the filename's tags, each once (a compressed set,
/// `py2.py3-none-any`, expanded: `py2-none-any`, `py3-none-any`): pip installs a wheel
/// by its filename, other tools by WHEEL, and both must mean the same Pythons and platforms.
pub(super) fn check_wheel_file(
    w: &crate::tags::AnyWheelFilename,
    dist_info: &str,
    files: &Files,
    r: &mut Report,
) {
    let path = format!("{dist_info}/WHEEL");
    let text = match files.get(&path) {
        None => {
            return r.problem(format!(
                "{path} is missing: pip installs no wheel without it"
            ))
        }
        Some(Seen { text: Some(t), .. }) => String::from_utf8_lossy(t).into_owned(),
        Some(_) => return r.problem(format!("{path} is over {} MiB: not read", KEEP_MAX >> 20)),
    };
    let mut tags: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Tag:"))
        .map(str::trim)
        .collect();
    tags.sort();
    let want = w.tags();
    if tags != want {
        let want = want.join(", ");
        let found = if tags.is_empty() {
            "no Tag line".to_string()
        } else {
            format!("Tag {}", shown(&tags.join(", ")))
        };
        let is = if w.tags().len() == 1 {
            "tag is"
        } else {
            "tags are"
        };
        r.problem(format!(
            "{path} has {found}, but the filename's {is} {want}: the two must agree (pip reads the filename, other tools WHEEL); build the wheel again"
        ));
    }
}

/// The filename's Python tag is one the manifest's plan makes (`py3-none`, or the
/// `cpXY` of one of its `--py`), and the one the manifest records.
pub(super) fn check_python_tag(w: &WheelFilename, m: &Manifest, r: &mut Report) {
    if let crate::plan::Package::Wheel { pythons, .. } = &m.plan.package {
        if !pythons.tags().contains(&w.python) {
            r.problem(format!(
                "the filename's Python tag is {}, but the manifest's plan makes {} wheels: the file was renamed; use the wheel as it was built",
                w.python,
                crate::listed(&pythons.tags(), "and")
            ));
        }
    }
    if let Some(tag) = &m.target.wheel_tag {
        if *tag != w.tag() {
            r.problem(format!(
                "the manifest records the tag {tag}, but the filename's tag is {}: the file was renamed; use the wheel as it was built",
                w.tag()
            ));
        }
    }
}

/// A manylinux tag says the oldest glibc its libraries run on: none may need a newer
/// one than the set's oldest tag (`manylinux2014_x86_64.manylinux_2_17_x86_64`: 2.17),
/// as the policies in toolchains/manylinux.toml judge their symbol versions. Below the
/// oldest policy (manylinux1, manylinux2010), only a need past that policy is a problem.
pub(super) fn check_wheel_tag(
    w: &crate::tags::AnyWheelFilename,
    files: &Files,
    r: &mut Report,
) -> Result<()> {
    let claimed = w
        .platforms
        .iter()
        .filter_map(|t| match crate::tags::PlatformKind::of(t) {
            crate::tags::PlatformKind::Linux {
                glibc_minor: Some(m),
                ..
            } => Some((m, t)),
            _ => None,
        })
        .min();
    let Some((claimed, tag)) = claimed else {
        return Ok(());
    };
    let infos: Vec<ElfInfo> = files
        .values()
        .filter_map(|s| s.elf()?.as_ref().ok().cloned())
        .collect();
    let bundled: BTreeSet<String> = files
        .keys()
        .filter_map(|p| p.rsplit('/').next())
        .map(str::to_string)
        .collect();
    let policies = Policies::builtin();
    let oldest = policies.policies.first().map_or(0, |p| p.glibc);
    if let Ok(PlatformTag::Manylinux {
        glibc_minor: needed,
        ..
    }) = policies.tag_for(&infos, &bundled)
    {
        if needed > claimed.max(oldest) {
            r.problem(format!(
                "tagged {tag} but its libraries need manylinux_2_{needed}"
            ));
        }
    }
    Ok(())
}

/// Whether `version`'s local label is of this tool's CUDA form, `cu135.sm120a` (a CUDA
/// release, then the GPU code: `sm120a`, `sm90.sm120a`, `ptx`), which no other publisher writes.
fn named_ours(version: &str) -> bool {
    let Some((_, local)) = version.split_once('+') else {
        return false;
    };
    let mut parts = local.split('.');
    let cuda = parts.next().and_then(|p| p.strip_prefix("cu"));
    cuda.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        && parts.next().is_some_and(|p| {
            p == "ptx"
                || p.strip_prefix("sm")
                    .is_some_and(|a| a.starts_with(|c: char| c.is_ascii_digit()))
        })
}

#[cfg(test)]
mod tests {
    /// Our CUDA labels claim the wheel is ours; torch's, a CPU label and none do not.
    #[test]
    fn a_cuda_label_with_its_gpu_code_is_ours_alone() {
        for v in [
            "0.3.36+cu135.sm120a",
            "0.3.16+cu130.sm90.sm120a",
            "1.0+cu128.ptx",
        ] {
            assert!(super::named_ours(v), "{v}");
        }
        for v in [
            "2.7.0+cu128",
            "2.7.0+cpu",
            "0.3.36+cpu.v3",
            "4.8.5",
            "1.0+cuda.sm90",
            "1.0+cu.sm90",
        ] {
            assert!(!super::named_ours(v), "{v}");
        }
    }
}
