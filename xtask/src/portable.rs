//! Names that are one file on every OS (issue 48): an artifact's entry names, whatever
//! its target, are unpacked onto Windows and macOS file systems too (a Linux wheel copied
//! to WSL2's /mnt/c, an archive unpacked on a Mac). There a name that Linux stores as
//! written may be no name at all, or the same file as another entry's: pip then stops
//! half-way through an install and leaves files it cannot uninstall.
//!
//! The rule, for one `/`-separated path ([`name_problem`]):
//! - no Windows-reserved character: `<>:"|?*`, `\` and the control characters 0x00-0x1f
//!   (`:` also names an NTFS alternate data stream: `llama-cli:x` writes a stream of
//!   `llama-cli`);
//! - no component that ends in a dot or a space (Windows drops them: `llama-cli.` is
//!   `llama-cli`);
//! - no Windows device name as a component, in any case, with or without an extension
//!   (`CON`, `aux.dll`, `com1.txt`; `PRN`, `NUL`, `COM0`-`COM9`, `LPT0`-`LPT9`, with
//!   `¹²³` too, `CONIN$`, `CONOUT$`): opening one opens the device;
//! - no component over [`MAX_COMPONENT`] bytes, no path over [`MAX_PATH`] bytes.
//!
//! And for the paths of one artifact together ([`Names`]): no two are one file on a
//! case-insensitive, normalisation-insensitive file system (NTFS, APFS, HFS+): equal once
//! each is normalised (NFD), case-folded (Unicode's full default case folding, which is
//! what `caseless` implements) and normalised again, which is Unicode's canonical caseless
//! match (D145). Whole paths are compared, and a file against the dirs that the other
//! paths imply (`lib` a file, `Lib/x.so` stored too). Full folding also takes `ß` for `ss`,
//! which NTFS does not: a name of that kind is refused though only some systems merge it.

use std::collections::BTreeMap;
use std::fmt;

use caseless::Caseless;
use unicode_normalization::UnicodeNormalization;

/// The most bytes in one path component (ext4, APFS; NTFS counts 255 UTF-16 units).
pub const MAX_COMPONENT: usize = 255;
/// The most bytes in a whole path (Linux's PATH_MAX).
pub const MAX_PATH: usize = 4096;

/// The characters Windows refuses in a name, but for the control characters.
const RESERVED: &str = "<>:\"|?*\\";

/// Windows' device names, matched against a component's part before its first dot.
const DEVICES: &[&str] = &["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];
/// Device names followed by one digit (0-9, or a superscript 1, 2, 3).
const NUMBERED: &[&str] = &["COM", "LPT"];

/// Why one path is not a name on every OS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// `:`, which on Windows names an alternate data stream of the file before it.
    Stream,
    /// Another character Windows refuses in a name.
    Reserved(char),
    /// A component that ends in a dot or a space.
    Trailing(String),
    /// A Windows device name as a component.
    Device(String),
    /// A component over [`MAX_COMPONENT`] bytes (its length).
    LongComponent(usize),
    /// The whole path over [`MAX_PATH`] bytes (its length).
    LongPath(usize),
    /// One file with `other` (a dir when `dir`) where names are compared normalised
    /// (macOS) and, when `case`, case-insensitively (Windows too). `mine`: the dir of
    /// the path that is the twin, when not the path itself.
    Twin {
        mine: Option<String>,
        other: String,
        dir: bool,
        case: bool,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = |s: &str| crate::escape::value(s).into_owned();
        let what = |dir: bool| if dir { "the dir " } else { "" };
        match self {
            Problem::Stream => f.write_str(
                "holds `:`, which on Windows names an NTFS alternate data stream of the file before it",
            ),
            Problem::Reserved(c) if c.is_control() => write!(
                f,
                "holds the control character {}, which Windows refuses in a name",
                v(&c.to_string())
            ),
            Problem::Reserved(c) => write!(f, "holds `{c}`, which Windows refuses in a name"),
            Problem::Trailing(c) => write!(
                f,
                "its component `{}` ends in a dot or a space, which Windows drops",
                v(c)
            ),
            Problem::Device(c) => write!(
                f,
                "its component `{}` is a Windows device name: opening it opens the device",
                v(c)
            ),
            Problem::LongComponent(n) => write!(
                f,
                "a component is {n} bytes long, over the {MAX_COMPONENT} that file systems allow"
            ),
            Problem::LongPath(n) => {
                write!(f, "the path is {n} bytes long, over the {MAX_PATH} allowed")
            }
            Problem::Twin {
                mine,
                other,
                dir,
                case,
            } => {
                if let Some(m) = mine {
                    write!(f, "its dir `{}` ", v(m))?;
                }
                write!(f, "collides with {}`{}` ", what(*dir), v(other))?;
                f.write_str(if *case {
                    "on a case-insensitive file system (Windows, macOS)"
                } else {
                    "on macOS: the same name once Unicode-normalised (NFC)"
                })
            }
        }
    }
}

/// The first problem of `path` (`/`-separated, no trailing `/`) on its own, if any.
pub fn name_problem(path: &str) -> Option<Problem> {
    if path.len() > MAX_PATH {
        return Some(Problem::LongPath(path.len()));
    }
    for c in path.chars() {
        if c == ':' {
            return Some(Problem::Stream);
        }
        if RESERVED.contains(c) || (c as u32) < 0x20 {
            return Some(Problem::Reserved(c));
        }
    }
    for comp in path.split('/') {
        if comp.len() > MAX_COMPONENT {
            return Some(Problem::LongComponent(comp.len()));
        }
        if comp.ends_with(['.', ' ']) && comp != "." && comp != ".." {
            return Some(Problem::Trailing(comp.to_string()));
        }
        if is_device(comp) {
            return Some(Problem::Device(comp.to_string()));
        }
    }
    None
}

/// Whether `comp` opens a device on Windows: its part before the first dot, less
/// trailing spaces, is a device name, in any case.
fn is_device(comp: &str) -> bool {
    let stem = comp
        .split('.')
        .next()
        .unwrap_or_default()
        .trim_end_matches(' ');
    if DEVICES.iter().any(|d| stem.eq_ignore_ascii_case(d)) {
        return true;
    }
    NUMBERED.iter().any(|d| {
        stem.get(..3).is_some_and(|p| p.eq_ignore_ascii_case(d))
            && matches!(
                &stem[3..],
                "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "¹" | "²" | "³"
            )
    })
}

/// The form two paths are one file under where names are compared case-insensitively and
/// normalised: NFC of the full case folding of the NFD form.
pub fn folded(path: &str) -> String {
    path.chars().nfd().default_case_fold().nfc().collect()
}

/// The paths of one artifact, added one at a time: each addition says which earlier path
/// it is one file with. A path stored twice as written is not a twin (the readers report
/// that themselves), nor are two dirs of one folded name (they are one dir, and no file is
/// lost). Kept as a tree of [`folded`] components, so that memory and time grow with the
/// names' length, not with their length times their depth: every path once, and a node
/// per component.
#[derive(Debug, Default)]
pub struct Names {
    /// Every path added, as written.
    paths: Vec<String>,
    root: Node,
}

#[derive(Debug, Default)]
struct Node {
    /// By [`folded`] component.
    children: BTreeMap<String, Node>,
    /// The file stored here, first: its index in [`Names::paths`].
    file: Option<usize>,
    /// The dir here, first: the path (index) and the length of it that names the dir.
    dir: Option<(usize, usize)>,
}

impl Names {
    pub fn new() -> Names {
        Names::default()
    }

    /// Adds a file, `path` without a trailing `/`: the twins it makes, if any.
    pub fn file(&mut self, path: &str) -> Vec<Problem> {
        self.add(path, false)
    }

    /// Adds a dir entry, `path` without its trailing `/`: the twins it makes, if any.
    pub fn dir(&mut self, path: &str) -> Vec<Problem> {
        self.add(path, true)
    }

    fn add(&mut self, path: &str, is_dir: bool) -> Vec<Problem> {
        let i = self.paths.len();
        self.paths.push(path.to_string());
        let paths = &self.paths;
        let mut out = Vec::new();
        let mut node = &mut self.root;
        let mut end = 0;
        let mut comps = path.split('/').peekable();
        while let Some(comp) = comps.next() {
            end += comp.len();
            let here = &path[..end];
            end += 1;
            node = node.children.entry(folded(comp)).or_default();
            let last = comps.peek().is_none();
            if let Some(f) = node.file {
                // A file here, and this path is a file or a dir of that name.
                let mine = (!last).then_some(here);
                out.extend(twin(here, mine, &paths[f], false));
            }
            if last && !is_dir {
                if let Some((d, n)) = node.dir {
                    out.extend(twin(here, None, &paths[d][..n], true));
                }
                node.file.get_or_insert(i);
            } else {
                node.dir.get_or_insert((i, here.len()));
            }
        }
        out
    }
}

/// `path` against `other`, which folds the same: the twin, unless it is the same name.
/// `mine`: `path` is a dir of the path added; `dir`: `other` is a dir.
fn twin(path: &str, mine: Option<&str>, other: &str, dir: bool) -> Option<Problem> {
    (path != other).then(|| Problem::Twin {
        mine: mine.map(str::to_string),
        other: other.to_string(),
        dir,
        case: !path.nfc().eq(other.nfc()),
    })
}

/// Every problem of `paths` (files, the names an artifact's writer is about to store), one
/// line each: `path: problem`. Empty when every name is one file on every OS.
pub fn problems<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names = Names::new();
    let mut out = Vec::new();
    for p in paths {
        let shown = crate::escape::value(p).into_owned();
        if let Some(why) = name_problem(p) {
            out.push(format!("{shown}: {why}"));
        }
        for why in names.file(p) {
            out.push(format!("{shown}: {why}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A verdict: allowed, or the start of the problem's message.
    fn verdict(path: &str) -> Option<String> {
        name_problem(path).map(|p| p.to_string())
    }

    #[test]
    fn one_name_alone() {
        let long = "a".repeat(MAX_COMPONENT + 1);
        let deep = ["d"; MAX_PATH / 2 + 1].join("/");
        let fits = format!(
            "{}/{}",
            "a".repeat(MAX_COMPONENT),
            "b".repeat(MAX_COMPONENT)
        );
        let cases: &[(&str, Option<&str>)] = &[
            // Allowed.
            ("llama_cpp/lib/libggml-cuda.so", None),
            ("llama_cpp_python-0.3.36.dist-info/RECORD", None),
            ("llama_cpp_python-0.3.36+cu135.sm120a.dist-info/WHEEL", None),
            ("llama.cpp-b1/bin/llama~1.txt", None),
            ("llama_cpp/lib/libstdc++.so.6", None),
            ("llama_cpp/données/café.txt", None),
            ("llama_cpp/日本語/模型.gguf", None),
            ("llama_cpp/.hidden", None),
            ("llama_cpp/console.py", None),
            ("llama_cpp/auxiliary.dll", None),
            ("llama_cpp/com10.txt", None),
            ("llama_cpp/lpt.txt", None),
            ("llama_cpp/nul_.txt", None),
            ("llama_cpp/xcon", None),
            ("llama_cpp/com4a", None),
            (&fits, None),
            // Windows-reserved characters.
            (
                "bin/llama-cli:x",
                Some("holds `:`, which on Windows names an NTFS"),
            ),
            ("bin/a<b", Some("holds `<`")),
            ("bin/a>b", Some("holds `>`")),
            ("bin/a\"b", Some("holds `\"`")),
            ("bin/a|b", Some("holds `|`")),
            ("bin/a?b", Some("holds `?`")),
            ("bin/a*b", Some("holds `*`")),
            ("bin\\a", Some("holds `\\`")),
            ("bin/a\u{0}b", Some("holds the control character \\x00")),
            ("bin/a\u{1f}b", Some("holds the control character \\x1f")),
            ("bin/a\nb", Some("holds the control character \\n")),
            // Trailing dots and spaces.
            (
                "bin/llama-cli.",
                Some("its component `llama-cli.` ends in a dot or a space"),
            ),
            ("bin/llama-cli ", Some("its component `llama-cli ` ends")),
            ("lib./x.so", Some("its component `lib.` ends")),
            ("lib /x.so", Some("its component `lib ` ends")),
            // Device names, any case, any extension, as a dir too.
            ("CON", Some("its component `CON` is a Windows device name")),
            (
                "bin/con",
                Some("its component `con` is a Windows device name"),
            ),
            ("bin/aux.dll", Some("its component `aux.dll` is a Windows")),
            (
                "bin/Aux.tar.gz",
                Some("its component `Aux.tar.gz` is a Windows"),
            ),
            (
                "bin/com1.txt",
                Some("its component `com1.txt` is a Windows"),
            ),
            ("bin/COM9", Some("its component `COM9` is a Windows")),
            ("bin/com0", Some("its component `com0` is a Windows")),
            (
                "bin/com¹.txt",
                Some("its component `com¹.txt` is a Windows"),
            ),
            ("bin/NUL", Some("its component `NUL` is a Windows")),
            (
                "bin/nul .txt",
                Some("its component `nul .txt` is a Windows"),
            ),
            ("bin/prn.h", Some("its component `prn.h` is a Windows")),
            ("bin/LPT9", Some("its component `LPT9` is a Windows")),
            ("bin/lpt3.so", Some("its component `lpt3.so` is a Windows")),
            ("bin/conin$", Some("its component `conin$` is a Windows")),
            (
                "bin/CONOUT$.log",
                Some("its component `CONOUT$.log` is a Windows"),
            ),
            ("aux/x.py", Some("its component `aux` is a Windows")),
            // Lengths.
            (&long, Some("a component is 256 bytes long, over the 255")),
            (
                &deep,
                Some("the path is 4097 bytes long, over the 4096 allowed"),
            ),
        ];
        let mut wrong = Vec::new();
        for (path, want) in cases {
            let got = verdict(path);
            let ok = match (want, &got) {
                (None, None) => true,
                (Some(w), Some(g)) => g.starts_with(w),
                _ => false,
            };
            if !ok {
                wrong.push(format!("{path:?}: want {want:?}, got {got:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn twins_in_one_artifact() {
        // (the paths, in order, and the problems they make, as `path: message`).
        let cases: &[(&[&str], &[&str])] = &[
            // Allowed: different names, the same name twice (reported by the readers),
            // non-ASCII names that fold apart, dirs shared.
            (
                &[
                    "llama_cpp/lib/libggml-cuda.so",
                    "llama_cpp/lib/libggml-base.so",
                    "llama_cpp_python-0.3.36.dist-info/RECORD",
                    "llama_cpp/café.txt",
                    "llama_cpp/cafe.txt",
                    "llama_cpp/日本.txt",
                    "llama_cpp/lib/libstdc++.so.6",
                    "llama_cpp/lib~/x",
                ],
                &[],
            ),
            (&["a/x", "a/x"], &[]),
            // Case twins.
            (
                &["llama_cpp/lib/Lib.so", "llama_cpp/lib/lib.so"],
                &["llama_cpp/lib/lib.so: collides with `llama_cpp/lib/Lib.so` on a case-insensitive file system (Windows, macOS)"],
            ),
            (
                &["Llama_cpp/a.so", "llama_cpp/A.so"],
                &["llama_cpp/A.so: collides with `Llama_cpp/a.so` on a case-insensitive"],
            ),
            // Unicode case: Greek, German sharp s under full folding.
            (&["ΣΑΣ.txt", "σας.txt"], &["σας.txt: collides with `ΣΑΣ.txt` on a case-insensitive"]),
            (&["straße", "STRASSE"], &["STRASSE: collides with `straße` on a case-insensitive"]),
            // NFC and NFD twins, and one that is both.
            (
                &["llama_cpp/caf\u{e9}.txt", "llama_cpp/cafe\u{301}.txt"],
                &["llama_cpp/cafe\u{301}.txt: collides with `llama_cpp/caf\u{e9}.txt` on macOS: the same name once Unicode-normalised (NFC)"],
            ),
            (
                &["caf\u{c9}", "cafe\u{301}"],
                &["cafe\u{301}: collides with `caf\u{c9}` on a case-insensitive"],
            ),
            // A file and a dir of one folded name, either order, dir entries too.
            (
                &["llama_cpp/Lib", "llama_cpp/lib/x.so"],
                &["llama_cpp/lib/x.so: its dir `llama_cpp/lib` collides with `llama_cpp/Lib` on a case-insensitive"],
            ),
            (
                &["llama_cpp/lib/x.so", "llama_cpp/Lib"],
                &["llama_cpp/Lib: collides with the dir `llama_cpp/lib` on a case-insensitive"],
            ),
        ];
        for (paths, want) in cases {
            let got = problems(paths.iter().copied());
            assert_eq!(got.len(), want.len(), "{paths:?}: {got:?}");
            for (g, w) in got.iter().zip(want.iter()) {
                assert!(g.starts_with(w), "{paths:?}: got {g:?}, want {w:?}");
            }
        }
        let mut n = Names::new();
        assert!(n.dir("Top").is_empty());
        assert_eq!(
            n.file("top")
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["collides with the dir `Top` on a case-insensitive file system (Windows, macOS)"]
        );
        let mut n = Names::new();
        assert!(n.file("top").is_empty());
        assert_eq!(n.dir("TOP").len(), 1);
        // Deep paths cost their length, not their length times their depth: 200 paths of
        // 2,000 components each (a copy of every ancestor would be 800 MB).
        let mut n = Names::new();
        let deep = ["x"; 2000].join("/");
        for i in 0..200 {
            assert!(n.file(&format!("t{i}/{deep}")).is_empty());
        }
        assert_eq!(n.file(&format!("T0/{deep}")).len(), 1);
        // Dirs of one folded name are one dir: no file is lost.
        let mut n = Names::new();
        assert!(n.file("A/x").is_empty() && n.file("a/y").is_empty());
    }
}
