//! What the plan packages: a wheel or an archive, and what goes in it.

use serde::{Deserialize, Serialize};

use crate::package::tags::{normalize_distribution, LocalLabel, PyVersion};
use crate::plan::cuda::PlannedCuda;
use crate::platform::{Os, Platform};
use crate::recipe::{Recipe, Release};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Package {
    Wheel {
        project: String,
        distribution: String,
        local: LocalLabel,
        pythons: Vec<PyVersion>,
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
    pythons: &[PyVersion],
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
            pythons: pythons.to_vec(),
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
                release.version,
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
