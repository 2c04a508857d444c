//! Wheels: the zip's central directory, the .dist-info files, and the file name's tags against WHEEL, the manifest and the libraries.

use super::*;

pub(super) fn verify_wheel(
    path: &Path,
    name: &str,
    limits: &Limits,
    col: &mut Collector,
    r: &mut Report,
) -> Result<(Files, Option<Manifest>)> {
    let parsed: Option<WheelFilename> = match name.parse::<WheelFilename>() {
        Ok(w) if w.to_string() == name => Some(w),
        Ok(w) => {
            r.problem(format!(
                "filename does not round-trip through the tag types: {name} reads back as {w}"
            ));
            None
        }
        Err(e) => {
            r.problem(format!("filename: {e}"));
            None
        }
    };
    let keep = |p: &str| {
        p.ends_with(".dist-info/RECORD")
            || p.ends_with(".dist-info/WHEEL")
            || p.ends_with(&format!(".dist-info/{}", manifest::WHEEL_NAME))
    };
    let mut order = Vec::new();
    let mut files: Files = BTreeMap::new();
    let listing = crate::package::wheel::stream_entries(path, limits, |head, data| {
        order.push(head.name.clone());
        check_name(head, r);
        match head.kind {
            EntryKind::File => {}
            // A symlink's data is its target: hashed like a file, so RECORD still vouches for it.
            EntryKind::Symlink => r.problem(format!(
                "{}: a symlink entry: a wheel holds regular files only",
                shown(&head.name)
            )),
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
    let dist_info = match &parsed {
        Some(w) => w.dist_info_dir(),
        None => order
            .iter()
            .find_map(|p| {
                p.split_once(".dist-info/")
                    .map(|(d, _)| format!("{d}.dist-info"))
            })
            .unwrap_or_default(),
    };
    let record_path = format!("{dist_info}/RECORD");
    match order.last() {
        Some(p) if *p == record_path => {}
        _ => r.problem(format!("{record_path} is not the last entry")),
    }
    let record = match files.get(&record_path) {
        None => {
            r.problem(format!("{record_path} is missing"));
            return Ok((files, None));
        }
        Some(Seen { text: Some(t), .. }) => String::from_utf8_lossy(t).into_owned(),
        Some(_) => {
            r.problem(format!(
                "{record_path} is over {} MiB: not read",
                KEEP_MAX >> 20
            ));
            return Ok((files, None));
        }
    };
    let mut listed = BTreeSet::new();
    for (n, line) in record.lines().enumerate() {
        let cols: Vec<&str> = line.rsplitn(3, ',').collect();
        let [size, hash, p] = cols.as_slice() else {
            r.problem(format!("RECORD line {}: malformed: {line}", n + 1));
            continue;
        };
        listed.insert(p.to_string());
        if *p == record_path {
            continue;
        }
        match files.get(*p) {
            None => r.problem(format!("RECORD lists {p}, which is not in the wheel")),
            Some(seen) => {
                if *hash != crate::package::wheel::record_hash_of(&seen.digest) {
                    r.problem(format!("{p}: sha256 differs from RECORD"));
                }
                if size.parse::<u64>().ok() != Some(seen.size) {
                    r.problem(format!(
                        "{p}: size {} differs from RECORD's {size}",
                        seen.size
                    ));
                }
            }
        }
    }
    for p in files.keys() {
        if !listed.contains(p) {
            r.problem(format!("{}: in the wheel but not in RECORD", shown(p)));
        }
    }
    if let Some(w) = &parsed {
        check_wheel_tag(w, &files, r)?;
    }
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
    if let Some(w) = &parsed {
        check_wheel_file(w, &dist_info, &files, r);
        if let Some(m) = &embedded {
            check_python_tag(w, m, r);
        }
    }
    // The manifest describes everything except itself and RECORD.
    files.remove(&manifest_path);
    files.remove(&record_path);
    Ok((files, embedded))
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

/// The WHEEL file's `Tag:` is the filename's tag, once: pip installs a wheel by its
/// filename, other tools by WHEEL, and both must mean the same Pythons and platform.
pub(super) fn check_wheel_file(w: &WheelFilename, dist_info: &str, files: &Files, r: &mut Report) {
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
    let tags: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Tag:"))
        .map(str::trim)
        .collect();
    let want = w.tag().to_string();
    if tags != [want.as_str()] {
        let found = if tags.is_empty() {
            "no Tag line".to_string()
        } else {
            format!("Tag {}", shown(&tags.join(", ")))
        };
        r.problem(format!(
            "{path} has {found}, but the filename's tag is {want}: the two must agree (pip reads the filename, other tools WHEEL); build the wheel again"
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

pub(super) fn check_wheel_tag(w: &WheelFilename, files: &Files, r: &mut Report) -> Result<()> {
    let infos: Vec<ElfInfo> = files
        .values()
        .filter_map(|s| s.elf()?.as_ref().ok().cloned())
        .collect();
    let bundled: BTreeSet<String> = files
        .keys()
        .filter_map(|p| p.rsplit('/').next())
        .map(str::to_string)
        .collect();
    if let (
        PlatformTag::Manylinux { glibc_minor, .. },
        Ok(PlatformTag::Manylinux {
            glibc_minor: needed,
            ..
        }),
    ) = (&w.platform, Policies::builtin().tag_for(&infos, &bundled))
    {
        if needed > *glibc_minor {
            r.problem(format!(
                "tagged {} but its libraries need manylinux_2_{needed}",
                w.platform
            ));
        }
    }
    Ok(())
}
