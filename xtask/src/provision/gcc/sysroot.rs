//! The glibc sysroot of the pinned toolchain (`<tree>/sysroot`): zig's glibc headers,
//! fixed at the pinned glibc version; the link stubs, crt1.o, Scrt1.o and
//! libc_nonshared.a zig makes for that version; crti.o, crtn.o and the compat archive,
//! made from `[sysroot]` of the pins file with the unpacked GCC; libgcc_s.so.1. All for
//! the pins' target (`[target]`: x86-64 or aarch64).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::pins::{Pinned, TargetPins};
use crate::provision::{fetch, unpack};
use crate::report::Log;

/// The files zig makes for a glibc target that the sysroot takes, with the name each
/// gets there (`None`: the target's dynamic loader, `[target] loader`; zig calls its stub
/// libld.so.2 on every architecture).
const ZIG_OUTPUTS: [(&str, Option<&str>); 11] = [
    ("libc.so.6", Some("libc.so.6")),
    ("libm.so.6", Some("libm.so.6")),
    ("libpthread.so.0", Some("libpthread.so.0")),
    ("libdl.so.2", Some("libdl.so.2")),
    ("librt.so.1", Some("librt.so.1")),
    ("libutil.so.1", Some("libutil.so.1")),
    ("libresolv.so.2", Some("libresolv.so.2")),
    ("libld.so.2", None),
    ("crt1.o", Some("crt1.o")),
    ("Scrt1.o", Some("Scrt1.o")),
    ("libc_nonshared.a", Some("libc_nonshared.a")),
];

/// The linker script `-lc` reads (as glibc installs it): the C library, its static part,
/// the compat definitions, and the loader where it is needed.
fn libc_script(t: &TargetPins) -> String {
    let (format, triple, loader) = (&t.output_format, &t.triple, &t.loader);
    format!(
        "OUTPUT_FORMAT({format})\nGROUP ( /usr/lib/{triple}/libc.so.6 /usr/lib/{triple}/libc_nonshared.a /usr/lib/{triple}/libforge_compat.a AS_NEEDED ( /usr/lib/{triple}/{loader} ) )\n"
    )
}

/// Makes `<root>/sysroot` with the toolchain unpacked under `root`.
pub(crate) fn make(cache: &Path, root: &Path, pinned: &Pinned, log: &Log) -> Result<()> {
    let glibc = &pinned.pins.gcc.glibc;
    let target = &pinned.pins.target;
    let minor: u32 = glibc
        .to_string()
        .strip_prefix("2.")
        .and_then(|m| m.parse().ok())
        .with_context(|| format!("glibc = \"{glibc}\" in {}: expected 2.N", pinned.file))?;
    let sysroot = root.join("sysroot");
    let include = sysroot.join("usr/include");
    let lib = sysroot.join(format!("usr/lib/{}", target.triple));
    fs_err::create_dir_all(&include)?;
    fs_err::create_dir_all(&lib)?;

    // zig, unpacked only for this: its tree is not kept.
    let zig = &pinned.pins.zig;
    let wheel = fetch::fetch(cache, &zig.url, &zig.sha256, log)
        .with_context(|| format!("cannot fetch zig {} ({})", zig.version, pinned.file))?;
    let work = tempfile::tempdir_in(root.parent().expect("the tree is in the tools dir"))?;
    let zig_root = work.path().join("zig");
    unpack::unpack_zip(&wheel, &zig_root)?;
    let zig_bin = zig_root.join(&zig.bin);
    unpack::set_mode(&zig_bin, 0o755)?;
    let libc = zig_bin
        .parent()
        .expect("zig is in a dir")
        .join("lib/libc/include");

    for dir in target.zig_headers.iter().rev() {
        let from = libc.join(dir);
        if !from.is_dir() {
            bail!(
                "zig {} has no header dir {dir} (`[target] zig_headers` in {})",
                zig.version,
                pinned.file
            );
        }
        copy_headers(&from, &include)?;
    }
    fix_headers(&include, minor)?;
    zig_outputs(&zig_bin, work.path(), target, &glibc.to_string(), &lib)?;
    strip_debug(root, pinned, &lib, work.path())?;
    fs_err::write(lib.join("libc.so"), libc_script(target))?;
    for (link, target) in [
        ("libm.so", "libm.so.6"),
        ("libpthread.so", "libpthread.so.0"),
        ("libdl.so", "libdl.so.2"),
        ("librt.so", "librt.so.1"),
        ("libutil.so", "libutil.so.1"),
        ("libresolv.so", "libresolv.so.2"),
    ] {
        super::symlink(target, &lib.join(link))?;
    }
    let gcc_s = pinned.libgcc_s(root);
    fs_err::copy(&gcc_s, lib.join("libgcc_s.so.1")).with_context(|| {
        format!(
            "the pinned packages have no {}: libgcc-s1 (a cross toolchain's libgcc-s1-<arch>-cross) is one of them",
            gcc_s.display()
        )
    })?;
    own_pieces(root, pinned, &lib, work.path())?;
    Ok(())
}

/// Copies the headers of `from` into `to`, replacing those of an earlier dir.
fn copy_headers(from: &Path, to: &Path) -> Result<()> {
    for e in walkdir::WalkDir::new(from)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
    {
        let e = e.with_context(|| format!("cannot read zig's headers in {}", from.display()))?;
        let out = to.join(e.path().strip_prefix(from).expect("under from"));
        if e.file_type().is_dir() {
            fs_err::create_dir_all(&out)?;
        } else if e.file_type().is_file() {
            fs_err::copy(e.path(), &out)?;
        } else {
            bail!(
                "{} in zig's headers is not a file or dir",
                e.path().display()
            );
        }
    }
    Ok(())
}

/// zig's glibc headers take the glibc version from `-D__GLIBC_MINOR__=N`, which zig passes:
/// the sysroot's features.h defines it instead. Headers glibc got after that version are
/// removed (zig's stop the compile with an #error, and GCC's libstdc++ looks for
/// sys/single_threaded.h with __has_include).
fn fix_headers(include: &Path, minor: u32) -> Result<()> {
    let features = include.join("features.h");
    let text = fs_err::read_to_string(&features)?;
    let marker = "/* Zig patch: we pass `-D__GLIBC_MINOR__=XX` depending on the target. */";
    if text.matches(marker).count() != 1 {
        bail!("{}: zig's line about __GLIBC_MINOR__ is not there once: another zig than the pinned one?", features.display());
    }
    fs_err::write(
        &features,
        text.replace(marker, &format!("#define __GLIBC_MINOR__ {minor}")),
    )?;
    // zig's math.h declares the C23 functions (acospi, rsqrt, ...; glibc 2.40 to 2.42) for
    // every version, and nvcc's CUDA math headers declare rsqrt with another exception
    // specification: the build fails. glibc before 2.40 declares none of them.
    if minor < 40 {
        let start = include.join("bits/libc-header-start.h");
        let text = fs_err::read_to_string(&start)?;
        let on = "# define __GLIBC_USE_IEC_60559_FUNCS_EXT_C23 1";
        if text.matches(on).count() != 1 {
            bail!(
                "{}: `{on}` is not there once: another zig than the pinned one?",
                start.display()
            );
        }
        fs_err::write(
            &start,
            text.replace(on, "# define __GLIBC_USE_IEC_60559_FUNCS_EXT_C23 0"),
        )?;
    }
    let newer = regex::Regex::new(r"did not exist before glibc 2\.(\d+)").expect("valid regex");
    for e in walkdir::WalkDir::new(include).sort_by_file_name() {
        let e = e?;
        if !e.file_type().is_file() {
            continue;
        }
        let text = fs_err::read(e.path())?;
        let text = String::from_utf8_lossy(&text);
        let since = newer.captures(&text).and_then(|c| c[1].parse::<u32>().ok());
        if since.is_some_and(|v| v > minor) {
            fs_err::remove_file(e.path())?;
        }
    }
    Ok(())
}

/// Runs zig for a shared library, a PIE and a non-PIE program, so that it makes the stubs
/// and crt files of `glibc`, and copies them (each found exactly once) into `lib`.
fn zig_outputs(
    zig: &Path,
    work: &Path,
    target: &TargetPins,
    glibc: &str,
    lib: &Path,
) -> Result<()> {
    let zcache = work.join("zig-cache");
    fs_err::create_dir_all(&zcache)?;
    let src = work.join("empty.c");
    fs_err::write(&src, "int main(void) { return 0; }\n")?;
    let cache_dir = zcache.display().to_string();
    let env = [
        ("ZIG_GLOBAL_CACHE_DIR", cache_dir.clone()),
        ("ZIG_LOCAL_CACHE_DIR", cache_dir),
    ];
    let zig_target = format!("{}.{glibc}", target.zig);
    let steps = [
        ("a.so", &["-shared", "-fPIC"][..]),
        ("a.pie", &["-fPIE", "-pie"]),
        ("a.exe", &["-no-pie"]),
    ]
    .iter()
    .map(|(out, extra)| {
        let mut argv = vec![
            zig.display().to_string(),
            "cc".into(),
            "-target".into(),
            zig_target.clone(),
            // Without these, zig builds its compiler_rt and UBSan runtime (Zig code) for
            // these throwaway programs: 15 s of the 16 here, and about 150 s of an aarch64
            // host's first run under qemu. The files taken below come out byte-identical
            // without them (compared for the x86-64 and the aarch64 target).
            "-rtlib=none".into(),
            "-fno-sanitize=undefined".into(),
        ];
        argv.extend(extra.iter().map(|a| a.to_string()));
        argv.push(src.display().to_string());
        argv.extend(
            [
                "-lm",
                "-lpthread",
                "-ldl",
                "-lrt",
                "-lutil",
                "-lresolv",
                "-o",
            ]
            .map(String::from),
        );
        argv.push(work.join(out).display().to_string());
        argv
    })
    .collect();
    super::run(steps, work, &env)?;
    let mut found: BTreeMap<&str, Vec<PathBuf>> = BTreeMap::new();
    for e in walkdir::WalkDir::new(&zcache) {
        let e = e?;
        let name = e.file_name().to_string_lossy();
        if let Some((zname, _)) = ZIG_OUTPUTS.iter().find(|(z, _)| *z == name) {
            if e.file_type().is_file() {
                found.entry(zname).or_default().push(e.path().to_path_buf());
            }
        }
    }
    for (zname, name) in ZIG_OUTPUTS {
        let name = name.unwrap_or(target.loader.as_str());
        match found.get(zname).map(Vec::as_slice) {
            Some([one]) => {
                fs_err::copy(one, lib.join(name))?;
            }
            other => bail!(
                "zig made {} copies of {zname} for glibc {glibc} (one expected): another zig than the pinned one?",
                other.map_or(0, <[PathBuf]>::len)
            ),
        }
    }
    Ok(())
}

/// zig compiles crt1.o, Scrt1.o and libc_nonshared.a with debug info that names its
/// temp tree: every program would carry that path. binutils' strip removes it. zig names
/// the archive's members by their path in its cache, so the archive is made again from
/// its members under their own names, in the same order.
fn strip_debug(root: &Path, pinned: &Pinned, lib: &Path, work: &Path) -> Result<()> {
    let strip = pinned.program(root, "strip");
    let ar = pinned.program(root, "ar");
    let members = work.join("nonshared");
    fs_err::create_dir_all(&members)?;
    let archive = lib.join("libc_nonshared.a");
    let mut names: Vec<String> = Vec::new();
    let bytes = fs_err::read(&archive)?;
    let parsed = object::read::archive::ArchiveFile::parse(&*bytes)
        .with_context(|| format!("{} is not an ar archive", archive.display()))?;
    for m in parsed.members() {
        let m = m.with_context(|| format!("{}: a member does not read", archive.display()))?;
        let id = String::from_utf8_lossy(m.name()).into_owned();
        let name = id.rsplit('/').next().unwrap_or_default().to_string();
        if !name.ends_with(".o") || names.contains(&name) {
            bail!(
                "{}: member `{id}` is not a uniquely named object",
                archive.display()
            );
        }
        let data = m
            .data(&*bytes)
            .with_context(|| format!("{}: member `{id}` does not read", archive.display()))?;
        fs_err::write(members.join(&name), data)?;
        names.push(name);
    }
    fs_err::remove_file(&archive)?;
    let mut steps: Vec<Vec<String>> = Vec::new();
    let strip_args = |files: Vec<String>| {
        let mut v = vec![strip.display().to_string(), "--strip-debug".into()];
        v.extend(files);
        v
    };
    steps.push(strip_args(vec![
        lib.join("crt1.o").display().to_string(),
        lib.join("Scrt1.o").display().to_string(),
    ]));
    steps.push(strip_args(names.clone()));
    let mut pack = vec![
        ar.display().to_string(),
        "rcD".into(),
        archive.display().to_string(),
    ];
    pack.extend(names);
    steps.push(pack);
    super::run(steps, &members, &[])
}

/// crti.o and crtn.o, and libforge_compat.a, from `[sysroot]` of the pins file, made with
/// the unpacked GCC and binutils (in `work`, with file names that carry no path).
fn own_pieces(root: &Path, pinned: &Pinned, lib: &Path, work: &Path) -> Result<()> {
    let gcc = pinned.program(root, &format!("gcc-{}", pinned.major()));
    let ar = pinned.program(root, "ar");
    let s = &pinned.pins.sysroot;
    fs_err::write(work.join("crti.S"), &s.crti)?;
    fs_err::write(work.join("crtn.S"), &s.crtn)?;
    fs_err::write(work.join("compat.c"), &s.compat)?;
    let sysroot = format!("--sysroot={}", root.join("sysroot").display());
    let steps: Vec<Vec<String>> = vec![
        vec![
            gcc.display().to_string(),
            "-c".into(),
            "crti.S".into(),
            "-o".into(),
            "crti.o".into(),
        ],
        vec![
            gcc.display().to_string(),
            "-c".into(),
            "crtn.S".into(),
            "-o".into(),
            "crtn.o".into(),
        ],
        vec![
            gcc.display().to_string(),
            sysroot,
            "-O2".into(),
            "-fPIC".into(),
            "-c".into(),
            "compat.c".into(),
            "-o".into(),
            "compat.o".into(),
        ],
        vec![
            ar.display().to_string(),
            "rcD".into(),
            "libforge_compat.a".into(),
            "compat.o".into(),
        ],
    ];
    super::run(steps, work, &[])?;
    for f in ["crti.o", "crtn.o", "libforge_compat.a"] {
        fs_err::copy(work.join(f), lib.join(f))?;
    }
    Ok(())
}
