//! Wheel filename and compatibility tags (PEP 427 / PEP 425 / PEP 600).

use std::fmt;
use std::str::FromStr;

use crate::platform::Arch;
use crate::versions::Version;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TagError {
    #[error("`{0}` is not a Python version: use 311 or 3.11 (CPython 3.8 to 3.14)")]
    Python(String),
    #[error(
        "`{0}` is not a platform tag: expected manylinux_2_NN_x86_64, linux_x86_64 or win_amd64"
    )]
    Platform(String),
    #[error("`{0}` is not a local version label: use letters, digits and dots, e.g. cpu or cu130.sm120a")]
    Local(String),
    #[error("`{0}` is not a wheel filename: expected NAME-VERSION-PY-ABI-PLATFORM.whl")]
    Filename(String),
}

/// A CPython minor version, `3.11`, written `311` in tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PyVersion {
    pub major: u8,
    pub minor: u8,
}

impl PyVersion {
    /// The interpreter tag, `cp311`.
    pub fn cp_tag(&self) -> String {
        format!("cp{}{}", self.major, self.minor)
    }
}

impl FromStr for PyVersion {
    type Err = TagError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().trim_start_matches("cp");
        let (major, minor) = match t.split_once('.') {
            Some((a, b)) => (a.parse::<u8>().ok(), b.parse::<u8>().ok()),
            None if t.len() >= 2 && t.chars().all(|c| c.is_ascii_digit()) => {
                (t[..1].parse().ok(), t[1..].parse().ok())
            }
            None => (None, None),
        };
        match (major, minor) {
            (Some(3), Some(minor)) if (8..=14).contains(&minor) => {
                Ok(PyVersion { major: 3, minor })
            }
            _ => Err(TagError::Python(s.to_string())),
        }
    }
}

impl fmt::Display for PyVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

serde_as_string!(PyVersion);
serde_as_string!(PlatformTag);
serde_as_string!(LocalLabel);
serde_as_string!(WheelTag);

/// A platform tag. Only the forms this tool writes are accepted.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PlatformTag {
    /// `manylinux_2_{glibc_minor}_{arch}` (PEP 600).
    Manylinux {
        glibc_minor: u32,
        arch: Arch,
    },
    /// `linux_{arch}`: runs on the build machine's kind of system, no promise beyond.
    Linux {
        arch: Arch,
    },
    WinAmd64,
}

impl PlatformTag {
    /// The CPU the tag's files are for.
    pub fn arch(&self) -> Arch {
        match self {
            PlatformTag::Manylinux { arch, .. } | PlatformTag::Linux { arch } => *arch,
            PlatformTag::WinAmd64 => Arch::X86_64,
        }
    }
}

impl FromStr for PlatformTag {
    type Err = TagError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || TagError::Platform(s.to_string());
        if s == "win_amd64" {
            return Ok(PlatformTag::WinAmd64);
        }
        if let Some(rest) = s.strip_prefix("manylinux_2_") {
            let (minor, arch) = rest.split_once('_').ok_or_else(err)?;
            let glibc_minor = minor.parse().map_err(|_| err())?;
            let arch = arch.parse().map_err(|_| err())?;
            return Ok(PlatformTag::Manylinux { glibc_minor, arch });
        }
        if let Some(arch) = s.strip_prefix("linux_") {
            let arch = arch.parse().map_err(|_| err())?;
            return Ok(PlatformTag::Linux { arch });
        }
        Err(err())
    }
}

impl fmt::Display for PlatformTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlatformTag::Manylinux { glibc_minor, arch } => {
                write!(f, "manylinux_2_{glibc_minor}_{arch}")
            }
            PlatformTag::Linux { arch } => write!(f, "linux_{arch}"),
            PlatformTag::WinAmd64 => f.write_str("win_amd64"),
        }
    }
}

/// A PEP 440 local version label: `cpu`, `cu130.sm120a`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalLabel(String);

impl FromStr for LocalLabel {
    type Err = TagError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ok = !s.is_empty()
            && s.split('.').all(|seg| {
                !seg.is_empty()
                    && seg
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            });
        if ok {
            Ok(LocalLabel(s.to_string()))
        } else {
            Err(TagError::Local(s.to_string()))
        }
    }
}

impl LocalLabel {
    /// The flavour's name in paths, `.` made `-`: `cpu`, `cpu-v3`, `cu130-sm120a` (a
    /// release's index per flavour, `<flavour>/simple`). One label, one name: labels
    /// have no `-`.
    pub fn flavour(&self) -> String {
        self.0.replace('.', "-")
    }
}

impl fmt::Display for LocalLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `{distribution}-{version}[+local]-{python}-{abi}-{platform}.whl`
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WheelFilename {
    /// Normalised distribution name (PEP 427: runs of `-_.` become `_`).
    pub distribution: String,
    pub version: Version,
    pub local: Option<LocalLabel>,
    pub python: PythonTag,
    pub platform: PlatformTag,
}

impl WheelFilename {
    /// The version as written in METADATA and the filename, `0.3.16+cpu`.
    pub fn full_version(&self) -> String {
        match &self.local {
            Some(l) => format!("{}+{}", self.version, l),
            None => self.version.to_string(),
        }
    }

    /// `{distribution}-{version}.dist-info`
    pub fn dist_info_dir(&self) -> String {
        format!("{}-{}.dist-info", self.distribution, self.full_version())
    }

    /// The `Tag:` line of the WHEEL file.
    pub fn tag(&self) -> WheelTag {
        WheelTag {
            python: self.python,
            platform: self.platform.clone(),
        }
    }
}

/// The shell pattern of the wheels of one flavour for one Python tag, any version, and
/// any platform or one of `arch`: `llama_cpp_python-*+cu130.sm120a-py3-none-*.whl`,
/// `...-py3-none-*_aarch64.whl`. Where dist/ holds several builds, it matches exactly
/// the one meant, so pip gets one candidate.
pub fn wheel_pattern(
    distribution: &str,
    local: &LocalLabel,
    python: PythonTag,
    arch: Option<Arch>,
) -> String {
    let platform = match arch {
        Some(a) => format!("*_{a}"),
        None => "*".to_string(),
    };
    format!("{distribution}-*+{local}-{python}-{platform}.whl")
}

/// A wheel's interpreter and ABI tags (PEP 425): `py3-none`, one wheel for every
/// Python 3 (llama_cpp loads its libraries with ctypes, no extension module is
/// built against a CPython ABI), or `cp311-cp311`, for one CPython only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PythonTag {
    /// `py3-none`.
    Py3,
    /// `cpXY-cpXY`.
    CPython(PyVersion),
}

impl fmt::Display for PythonTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PythonTag::Py3 => f.write_str("py3-none"),
            PythonTag::CPython(py) => {
                let cp = py.cp_tag();
                write!(f, "{cp}-{cp}")
            }
        }
    }
}

impl PythonTag {
    /// The tag from a filename's interpreter and ABI parts (`py3`, `none`), in the
    /// forms this tool writes; `None` for any other.
    fn from_parts(py: &str, abi: &str) -> Option<PythonTag> {
        if (py, abi) == ("py3", "none") {
            return Some(PythonTag::Py3);
        }
        let version: PyVersion = py.strip_prefix("cp")?.parse().ok()?;
        (py == version.cp_tag() && abi == py).then_some(PythonTag::CPython(version))
    }
}

/// A wheel's compatibility tag, `py3-none-manylinux_2_28_x86_64` or
/// `cp311-cp311-manylinux_2_34_x86_64`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WheelTag {
    pub python: PythonTag,
    pub platform: PlatformTag,
}

impl fmt::Display for WheelTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.python, self.platform)
    }
}

impl FromStr for WheelTag {
    type Err = TagError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || TagError::Filename(s.to_string());
        let mut parts = s.splitn(3, '-');
        let (Some(py), Some(abi), Some(platform)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(err());
        };
        Ok(WheelTag {
            python: PythonTag::from_parts(py, abi).ok_or_else(err)?,
            platform: platform.parse()?,
        })
    }
}

/// Any wheel's filename, as PEP 427 and PEP 425 allow it, not only the forms this tool
/// writes ([`WheelFilename`]): `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`,
/// each tag a compressed set whose parts are dot-separated: `six-1.17.0-py2.py3-none-any.whl`,
/// `ctranslate2-4.8.5-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl`.
/// Only the form is checked: `verify` reads anyone's wheel through it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnyWheelFilename {
    /// As written (PEP 427: runs of `-_.` written `_`; older wheels keep case and dots).
    pub distribution: String,
    pub version: String,
    /// The optional build tag, which starts with a digit.
    pub build: Option<String>,
    pub pythons: Vec<String>,
    pub abis: Vec<String>,
    pub platforms: Vec<String>,
}

impl AnyWheelFilename {
    /// Every tag the compressed sets expand to, `{python}-{abi}-{platform}`, sorted:
    /// the `Tag:` lines the WHEEL file holds.
    pub fn tags(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .pythons
            .iter()
            .flat_map(|py| {
                self.abis.iter().flat_map(move |abi| {
                    self.platforms
                        .iter()
                        .map(move |plat| format!("{py}-{abi}-{plat}"))
                })
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

impl FromStr for AnyWheelFilename {
    type Err = TagError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || TagError::Filename(s.to_string());
        let stem = s.strip_suffix(".whl").ok_or_else(err)?;
        let parts: Vec<&str> = stem.split('-').collect();
        let (dist, ver, build, py, abi, plat) = match parts.as_slice() {
            [d, v, p, a, pl] => (*d, *v, None, *p, *a, *pl),
            [d, v, b, p, a, pl] => (*d, *v, Some(*b), *p, *a, *pl),
            _ => return Err(err()),
        };
        let word = |w: &str, extra: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || extra.contains(c))
        };
        let set = |t: &str| -> Option<Vec<String>> {
            let parts: Vec<String> = t.split('.').map(str::to_string).collect();
            parts.iter().all(|p| word(p, "")).then_some(parts)
        };
        let build_ok =
            build.is_none_or(|b| word(b, ".") && b.starts_with(|c: char| c.is_ascii_digit()));
        if !word(dist, ".") || !word(ver, ".+!") || !build_ok {
            return Err(err());
        }
        Ok(AnyWheelFilename {
            distribution: dist.to_string(),
            version: ver.to_string(),
            build: build.map(str::to_string),
            pythons: set(py).ok_or_else(err)?,
            abis: set(abi).ok_or_else(err)?,
            platforms: set(plat).ok_or_else(err)?,
        })
    }
}

/// What one PEP 425 platform tag says of the system a wheel's binaries run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlatformKind {
    /// `manylinux1_x86_64`, `manylinux2014_aarch64`, `manylinux_2_28_x86_64`,
    /// `musllinux_1_2_x86_64`, `linux_i686`: ELF code for `arch` (as the tag writes it),
    /// needing at most glibc 2.`glibc_minor` where the tag says (a manylinux tag).
    Linux {
        arch: String,
        glibc_minor: Option<u32>,
    },
    /// `win32`, `win_amd64`, `win_arm64`: PE code for that machine.
    Windows { machine: WindowsMachine },
    /// `any`, `macosx_14_0_arm64` and the rest: nothing this tool checks binaries against.
    Other,
}

/// The CPU of a Windows platform tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowsMachine {
    X86,
    X86_64,
    Arm64,
}

impl PlatformKind {
    /// What `tag` says (PEP 600: manylinux1 is glibc 2.5, manylinux2010 2.12, manylinux2014 2.17).
    pub fn of(tag: &str) -> PlatformKind {
        match tag {
            "win32" => {
                return PlatformKind::Windows {
                    machine: WindowsMachine::X86,
                }
            }
            "win_amd64" => {
                return PlatformKind::Windows {
                    machine: WindowsMachine::X86_64,
                }
            }
            "win_arm64" => {
                return PlatformKind::Windows {
                    machine: WindowsMachine::Arm64,
                }
            }
            _ => {}
        }
        let linux = |arch: &str, glibc_minor: Option<u32>| match arch.is_empty() {
            true => PlatformKind::Other,
            false => PlatformKind::Linux {
                arch: arch.to_string(),
                glibc_minor,
            },
        };
        for (legacy, minor) in [
            ("manylinux1_", 5),
            ("manylinux2010_", 12),
            ("manylinux2014_", 17),
        ] {
            if let Some(arch) = tag.strip_prefix(legacy) {
                return linux(arch, Some(minor));
            }
        }
        // manylinux_X_Y_ARCH, musllinux_X_Y_ARCH: two numbers, then the arch.
        for (prefix, glibc) in [("manylinux_", true), ("musllinux_", false)] {
            if let Some(rest) = tag.strip_prefix(prefix) {
                let mut it = rest.splitn(3, '_');
                let (Some(major), Some(minor), Some(arch)) = (it.next(), it.next(), it.next())
                else {
                    return PlatformKind::Other;
                };
                let (Ok(major), Ok(minor)) = (major.parse::<u32>(), minor.parse::<u32>()) else {
                    return PlatformKind::Other;
                };
                // glibc 2.x only: a glibc 3 would be a new scheme, judged by nothing here.
                let floor = (glibc && major == 2).then_some(minor);
                return linux(arch, floor);
            }
        }
        match tag.strip_prefix("linux_") {
            Some(arch) => linux(arch, None),
            None => PlatformKind::Other,
        }
    }
}

/// PEP 427 escaping of a project name for filenames.
pub fn normalize_distribution(name: &str) -> String {
    let mut out = String::new();
    let mut last_sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !last_sep {
                out.push('_');
            }
            last_sep = true;
        } else {
            out.push(c.to_ascii_lowercase());
            last_sep = false;
        }
    }
    out
}

impl fmt::Display for WheelFilename {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}-{}.whl",
            self.distribution,
            self.full_version(),
            self.tag()
        )
    }
}

impl FromStr for WheelFilename {
    type Err = TagError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || TagError::Filename(s.to_string());
        let stem = s.strip_suffix(".whl").ok_or_else(err)?;
        let parts: Vec<&str> = stem.split('-').collect();
        let [dist, ver, py, abi, plat] = parts.as_slice() else {
            return Err(err());
        };
        if dist.is_empty() || normalize_distribution(dist) != *dist {
            return Err(err());
        }
        let (ver, local) = match ver.split_once('+') {
            Some((v, l)) => (v, Some(l.parse::<LocalLabel>()?)),
            None => (*ver, None),
        };
        let python = PythonTag::from_parts(py, abi).ok_or_else(err)?;
        Ok(WheelFilename {
            distribution: dist.to_string(),
            version: ver.parse().map_err(|_| err())?,
            local,
            python,
            platform: plat.parse()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn py_versions() {
        assert_eq!("311".parse::<PyVersion>().unwrap().cp_tag(), "cp311");
        assert_eq!("3.10".parse::<PyVersion>().unwrap().cp_tag(), "cp310");
        assert_eq!("cp314".parse::<PyVersion>().unwrap().to_string(), "3.14");
        for bad in ["2.7", "27", "3", "abc", "3.99", "411"] {
            assert!(bad.parse::<PyVersion>().is_err(), "{bad}");
        }
    }

    #[test]
    fn wheel_filename_round_trips() {
        let name = "llama_cpp_python-0.3.16+cpu-cp311-cp311-manylinux_2_34_x86_64.whl";
        let w: WheelFilename = name.parse().unwrap();
        assert_eq!(w.to_string(), name);
        assert_eq!(w.dist_info_dir(), "llama_cpp_python-0.3.16+cpu.dist-info");
        assert_eq!(
            w.platform,
            PlatformTag::Manylinux {
                glibc_minor: 34,
                arch: Arch::X86_64
            }
        );
        let cuda = "llama_cpp_python-0.3.16+cu130.sm120a-cp312-cp312-linux_x86_64.whl";
        assert_eq!(cuda.parse::<WheelFilename>().unwrap().to_string(), cuda);
        let any = "llama_cpp_python-0.3.36+cu130.sm120a-py3-none-manylinux_2_28_x86_64.whl";
        let w: WheelFilename = any.parse().unwrap();
        assert_eq!((w.python, w.to_string().as_str()), (PythonTag::Py3, any));
        assert_eq!(
            w.tag().to_string(),
            "py3-none-manylinux_2_28_x86_64",
            "the WHEEL file's Tag line"
        );
    }

    #[test]
    fn a_wheel_pattern_matches_one_flavour_and_python_tag() {
        let cu: LocalLabel = "cu130.sm120a".parse().unwrap();
        assert_eq!(
            wheel_pattern("llama_cpp_python", &cu, PythonTag::Py3, None),
            "llama_cpp_python-*+cu130.sm120a-py3-none-*.whl"
        );
        assert_eq!(
            wheel_pattern("llama_cpp_python", &cu, PythonTag::Py3, Some(Arch::Aarch64)),
            "llama_cpp_python-*+cu130.sm120a-py3-none-*_aarch64.whl"
        );
        let py: PyVersion = "311".parse().unwrap();
        assert_eq!(
            wheel_pattern("llama_cpp_python", &cu, PythonTag::CPython(py), None),
            "llama_cpp_python-*+cu130.sm120a-cp311-cp311-*.whl"
        );
    }

    #[test]
    fn wheel_filename_rejects_malformed() {
        for bad in [
            "llama_cpp_python-0.3.16-cp311-cp311-manylinux_2_34_x86_64.zip",
            "llama-cpp-python-0.3.16-cp311-cp311-linux_x86_64.whl",
            "llama_cpp_python-0.3.16-cp311-abi3-linux_x86_64.whl",
            "llama_cpp_python-0.3.16+CPU-cp311-cp311-linux_x86_64.whl",
            "llama_cpp_python-0.3.16-cp311-cp311-manylinux_2_x_x86_64.whl",
            "llama_cpp_python-0.3.16-py3-cp311-linux_x86_64.whl",
            "llama_cpp_python-0.3.16-py3-abi3-linux_x86_64.whl",
            "llama_cpp_python-0.3.16-py2-none-linux_x86_64.whl",
            "llama_cpp_python-0.3.16-cp311-none-linux_x86_64.whl",
            "llama_cpp_python-0.3.16-cp27-cp27-linux_x86_64.whl",
        ] {
            assert!(bad.parse::<WheelFilename>().is_err(), "{bad}");
        }
    }

    /// Anyone's wheel names: compressed tag sets (PEP 425), a build tag, legacy manylinux
    /// names; a name of another shape is refused.
    #[test]
    fn any_wheel_filename_reads_compressed_tag_sets() {
        let w: AnyWheelFilename =
            "ctranslate2-4.8.5-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
                .parse()
                .unwrap();
        assert_eq!(
            (w.distribution.as_str(), w.version.as_str(), &w.build),
            ("ctranslate2", "4.8.5", &None)
        );
        assert_eq!(
            w.tags(),
            [
                "cp312-cp312-manylinux_2_27_x86_64",
                "cp312-cp312-manylinux_2_28_x86_64"
            ]
        );
        let six: AnyWheelFilename = "six-1.17.0-py2.py3-none-any.whl".parse().unwrap();
        assert_eq!(six.tags(), ["py2-none-any", "py3-none-any"]);
        let built: AnyWheelFilename = "pkg-1.0-1b-py3-none-any.whl".parse().unwrap();
        assert_eq!(built.build.as_deref(), Some("1b"));
        let ours = "llama_cpp_python-0.3.16+cu130.sm120a-cp312-cp312-linux_x86_64.whl";
        assert_eq!(
            ours.parse::<AnyWheelFilename>().unwrap().tags(),
            ["cp312-cp312-linux_x86_64"]
        );
        for bad in [
            "six-1.17.0-py2..py3-none-any.whl",
            "six-1.17.0-py3-none-.whl",
            "six-1.17.0-py3-none.whl",
            "six-1.17.0-b1-py3-none-any.whl",
            "six-1.17.0-1-2-py3-none-any.whl",
            "six-1.17.0-py3-none-any.zip",
            "-1.0-py3-none-any.whl",
            "six-1 0-py3-none-any.whl",
        ] {
            assert!(bad.parse::<AnyWheelFilename>().is_err(), "{bad}");
        }
        let linux = |arch: &str, glibc: Option<u32>| PlatformKind::Linux {
            arch: arch.into(),
            glibc_minor: glibc,
        };
        for (tag, kind) in [
            ("manylinux1_x86_64", linux("x86_64", Some(5))),
            ("manylinux2010_i686", linux("i686", Some(12))),
            ("manylinux2014_aarch64", linux("aarch64", Some(17))),
            ("manylinux_2_28_ppc64le", linux("ppc64le", Some(28))),
            ("musllinux_1_2_x86_64", linux("x86_64", None)),
            ("linux_armv7l", linux("armv7l", None)),
            (
                "win_arm64",
                PlatformKind::Windows {
                    machine: WindowsMachine::Arm64,
                },
            ),
            ("any", PlatformKind::Other),
            ("macosx_14_0_arm64", PlatformKind::Other),
            ("manylinux_2_x86_64", PlatformKind::Other),
        ] {
            assert_eq!(PlatformKind::of(tag), kind, "{tag}");
        }
    }

    #[test]
    fn normalizes_names() {
        assert_eq!(
            normalize_distribution("llama-cpp-python"),
            "llama_cpp_python"
        );
        assert_eq!(normalize_distribution("Foo.-Bar"), "foo_bar");
    }

    #[test]
    fn wheel_tags_and_arches_round_trip_and_refuse_other_forms() {
        for s in [
            "cp311-cp311-manylinux_2_34_x86_64",
            "cp314-cp314-linux_aarch64",
            "cp312-cp312-win_amd64",
            "py3-none-manylinux_2_28_x86_64",
            "py3-none-win_amd64",
        ] {
            assert_eq!(s.parse::<WheelTag>().unwrap().to_string(), s);
        }
        for bad in [
            "cp311-abi3-linux_x86_64",
            "py3-none-any",
            "cp311-cp311-linux_riscv64",
            "cp311",
        ] {
            assert!(bad.parse::<WheelTag>().is_err(), "{bad}");
        }
        assert_eq!("aarch64".parse::<Arch>().unwrap(), Arch::Aarch64);
        assert_eq!(Arch::host().to_string(), std::env::consts::ARCH);
    }
}
