//! What the plan packages: a wheel or an archive, and what goes in it.

use serde::{Deserialize, Serialize};

use crate::plan::cuda::PlannedCuda;
use crate::platform::{Os, Platform};
use crate::recipe::{Recipe, Release};
use crate::tags::{normalize_distribution, LocalLabel, PyVersion, PythonTag};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Package {
    Wheel {
        project: String,
        distribution: String,
        local: LocalLabel,
        /// One `py3-none` wheel for every Python (`"py3"` in the JSON), or one
        /// `cpXY-cpXY` wheel for each CPython of `--py` (a list, as every plan from
        /// before `py3` wheels had, so their hashes hold).
        pythons: WheelPythons,
        packages: Vec<String>,
        lib_dir: String,
        collect_from: String,
        libraries: Vec<String>,
        /// Where the CPU backend variants are (`${BUILD}/bin`): the package's install
        /// step does not install them.
        modules_from: String,
        /// The CPU backend variants (`ggml-cpu-haswell`), from [`crate::plan::Plan::cpu_variants`].
        modules: Vec<String>,
        /// Extra Requires-Dist lines (CUDA runtime wheels).
        requires: Vec<String>,
    },
    Archive {
        stem: String,
        /// `tar.gz`, or `zip` for Windows. Left out of the JSON for tar.gz, which every
        /// plan from before Windows archives had, so their hashes hold.
        #[serde(default, skip_serializing_if = "ArchiveFormat::is_tar_gz")]
        format: ArchiveFormat,
        collect_from: String,
        /// Program file names (`llama-cli`, or `llama-cli.exe` for Windows).
        binaries: Vec<String>,
        optional_binaries: Vec<String>,
        libraries: Vec<String>,
        docs: Vec<String>,
    },
}

/// Which wheels one build makes: the choice between one wheel for every Python 3
/// and one per CPython asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WheelPythons {
    /// One `py3-none` wheel, for every CPython the recipe's Requires-Python allows:
    /// the package loads its libraries with ctypes, so nothing ties it to one ABI.
    Py3,
    /// One `cpXY-cpXY` wheel per version (`--py 311,312`), never empty.
    CPython(Vec<PyVersion>),
}

impl WheelPythons {
    /// The default (`py3`) when `asked` is empty, else those CPythons.
    pub fn from_asked(asked: &[PyVersion]) -> WheelPythons {
        if asked.is_empty() {
            WheelPythons::Py3
        } else {
            WheelPythons::CPython(asked.to_vec())
        }
    }

    /// The interpreter tag of each wheel the build makes.
    pub fn tags(&self) -> Vec<PythonTag> {
        match self {
            WheelPythons::Py3 => vec![PythonTag::Py3],
            WheelPythons::CPython(v) => v.iter().copied().map(PythonTag::CPython).collect(),
        }
    }

    /// The CPythons asked for, as `--py` takes them: empty for `py3`.
    pub fn asked(&self) -> Vec<PyVersion> {
        match self {
            WheelPythons::Py3 => vec![],
            WheelPythons::CPython(v) => v.clone(),
        }
    }
}

impl std::fmt::Display for WheelPythons {
    /// `py3`, or `3.11, 3.12`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WheelPythons::Py3 => f.write_str(PY3),
            WheelPythons::CPython(v) => {
                let names: Vec<String> = v.iter().map(|p| p.to_string()).collect();
                f.write_str(&names.join(", "))
            }
        }
    }
}

const PY3: &str = "py3";

impl Serialize for WheelPythons {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            WheelPythons::Py3 => s.serialize_str(PY3),
            WheelPythons::CPython(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for WheelPythons {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            List(Vec<PyVersion>),
        }
        let raw = Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "`pythons` is neither \"py3\" nor a list of Python versions such as [\"3.11\"]",
            )
        })?;
        match raw {
            Raw::Word(w) if w == PY3 => Ok(WheelPythons::Py3),
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "`pythons` is \"{}\": expected \"py3\" or a list of Python versions such as [\"3.11\"]",
                crate::escape::value(&w)
            ))),
            Raw::List(v) if v.is_empty() => Err(serde::de::Error::custom(
                "`pythons` is an empty list: a wheel plan names \"py3\" or at least one Python",
            )),
            Raw::List(v) => Ok(WheelPythons::CPython(v)),
        }
    }
}

/// In the manifest's JSON schema: `"py3"` or a list of versions.
impl schemars::JsonSchema for WheelPythons {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WheelPythons".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [
                { "const": PY3 },
                { "type": "array", "items": { "type": "string" }, "minItems": 1 }
            ]
        })
    }
}

/// How an archive is packed: `tar.gz` (Linux) or `zip` (Windows, where every
/// user can open it).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum ArchiveFormat {
    #[default]
    #[serde(rename = "tar.gz")]
    TarGz,
    #[serde(rename = "zip")]
    Zip,
}

impl ArchiveFormat {
    pub fn is_tar_gz(&self) -> bool {
        *self == ArchiveFormat::TarGz
    }

    /// The file name's ending: `.tar.gz`, `.zip`.
    pub fn extension(self) -> &'static str {
        match self {
            ArchiveFormat::TarGz => ".tar.gz",
            ArchiveFormat::Zip => ".zip",
        }
    }
}

/// The wheel or archive the recipe makes, with the CUDA libraries of a GPU build.
pub fn package(
    recipe: &Recipe,
    release: &Release,
    pythons: WheelPythons,
    local: LocalLabel,
    cuda: Option<&PlannedCuda>,
    cpu_variants: &[crate::cpu::ShippedVariant],
    platform: &Platform,
) -> Package {
    let exes = |names: &[String]| -> Vec<String> {
        let suffix = platform.os().exe_suffix();
        names.iter().map(|n| format!("{n}{suffix}")).collect()
    };
    let modules: Vec<String> = cpu_variants
        .iter()
        .map(|v| crate::cpu::variants::target(&v.name))
        .collect();
    let cuda_libs: Vec<String> = match (cuda, &recipe.wheel, &recipe.archive) {
        (None, _, _) => vec![],
        (Some(_), Some(w), _) => w.cuda_libraries.clone(),
        (Some(_), None, Some(a)) => a.cuda_libraries.clone(),
        (Some(_), None, None) => vec![],
    };
    match (&recipe.wheel, &recipe.archive) {
        (Some(w), _) => Package::Wheel {
            project: w.project.clone(),
            distribution: normalize_distribution(&w.project),
            local,
            pythons,
            packages: w.packages.clone(),
            lib_dir: w.lib_dir.clone(),
            collect_from: w.collect_from.clone(),
            libraries: w.libraries.iter().chain(&cuda_libs).cloned().collect(),
            modules_from: w.modules_from.clone(),
            modules,
            requires: cuda.map(|c| c.requires.clone()).unwrap_or_default(),
        },
        (None, Some(a)) => Package::Archive {
            stem: format!(
                "{}-{}-{}-{}",
                recipe.name,
                release.name(),
                local,
                platform.target().archive_platform()
            ),
            format: match platform.os() {
                Os::Linux => ArchiveFormat::TarGz,
                Os::Windows => ArchiveFormat::Zip,
            },
            collect_from: a.collect_from.clone(),
            binaries: exes(&a.binaries),
            optional_binaries: exes(&a.optional_binaries),
            // The variants are modules beside the tools: nothing links them, so they are named.
            libraries: a
                .libraries
                .iter()
                .chain(&cuda_libs)
                .chain(&modules)
                .cloned()
                .collect(),
            docs: a.docs.clone(),
        },
        (None, None) => unreachable!("recipe validation guarantees an artifact table"),
    }
}
