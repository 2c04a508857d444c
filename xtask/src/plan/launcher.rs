//! An optional compiler launcher (`--launcher ccache|sccache`), so a team can
//! share compile results across builds and machines.
//!
//! A launcher changes how fast objects are made, never which bytes: it is kept
//! out of the plan's identity (`Plan::hash`) and out of the manifest inside the
//! artifact, so an artifact built with and without it is the same file. The
//! manifest beside the artifact records which launcher ran. Compiles see only
//! the stable build path (`/tmp/llama-forge/<source id>`), so cache entries match
//! across checkouts and machines without any base-dir setting.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::detect::toolchain::Tool;
use crate::plan::setting::{portable, Setting, SettingOrigin, ToolRecord};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LauncherKind {
    Ccache,
    Sccache,
}

impl LauncherKind {
    pub fn program(self) -> &'static str {
        match self {
            LauncherKind::Ccache => "ccache",
            LauncherKind::Sccache => "sccache",
        }
    }
    /// The variable naming the local cache dir, and the prefix of the tool's own settings.
    fn dir_var(self) -> &'static str {
        match self {
            LauncherKind::Ccache => "CCACHE_DIR",
            LauncherKind::Sccache => "SCCACHE_DIR",
        }
    }
    fn prefix(self) -> &'static str {
        match self {
            LauncherKind::Ccache => "CCACHE_",
            LauncherKind::Sccache => "SCCACHE_",
        }
    }
}

impl fmt::Display for LauncherKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.program())
    }
}

impl FromStr for LauncherKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ccache" => Ok(LauncherKind::Ccache),
            "sccache" => Ok(LauncherKind::Sccache),
            _ => Err(format!("unknown launcher `{s}`: use ccache or sccache")),
        }
    }
}

/// The launcher as the build uses it and the manifest beside the artifact records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Launcher {
    pub kind: LauncherKind,
    pub tool: ToolRecord,
    /// Given to CMake at configure time, after the plan's own defines.
    pub defines: Vec<Setting>,
    /// Added to the plan's environment. Values taken from the user's environment
    /// (remote cache settings may hold credentials) are recorded as `(from the environment)`.
    pub env: Vec<Setting>,
    /// The real values of the variables passed through; never written anywhere.
    #[serde(skip)]
    pub passed: BTreeMap<String, String>,
}

pub const FROM_ENV: &str = "(from the environment)";

impl Launcher {
    /// The environment the build commands get, on top of the plan's.
    pub fn build_env(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.env.iter().map(|s| {
            let value = if s.value == FROM_ENV {
                self.passed.get(&s.name).cloned().unwrap_or_default()
            } else {
                s.value.clone()
            };
            (s.name.clone(), value)
        })
    }

    /// A short identity: a configured build dir is reconfigured when it changes.
    pub fn id(&self) -> String {
        format!("{} {} {}", self.kind, self.tool.version, self.tool.path)
    }
}

/// Pure: the launcher settings for a plan. `cuda_launcher` is the plan's own
/// `CMAKE_CUDA_COMPILER_LAUNCHER` (the seed script), which runs first and hands
/// its command to the cache tool. `user_env` holds the user's `CCACHE_*` or
/// `SCCACHE_*` variables.
pub fn plan(
    kind: LauncherKind,
    tool: &Tool,
    cuda: bool,
    cuda_launcher: Option<&str>,
    user_env: &BTreeMap<String, String>,
    cache: &Path,
) -> Launcher {
    let path = portable(&tool.path, cache);
    let record = ToolRecord {
        path: path.clone(),
        version: tool.version.clone(),
        origin: tool.origin.clone(),
        kind: None,
    };
    let why = format!(
        "--launcher {kind}: compile results are cached; the objects are the same bytes either way"
    );
    let mut defines = vec![
        Setting {
            name: "CMAKE_C_COMPILER_LAUNCHER".into(),
            value: path.clone(),
            reason: why.clone(),
            origin: SettingOrigin::Launcher,
        },
        Setting {
            name: "CMAKE_CXX_COMPILER_LAUNCHER".into(),
            value: path.clone(),
            reason: why.clone(),
            origin: SettingOrigin::Launcher,
        },
    ];
    if cuda {
        let value = match cuda_launcher {
            Some(seed) => format!("{seed};{path}"),
            None => path.clone(),
        };
        defines.push(Setting {
            name: "CMAKE_CUDA_COMPILER_LAUNCHER".into(),
            value,
            reason: format!(
                "{why}; the nvcc seed script runs first and hands its command line to {kind}"
            ),
            origin: SettingOrigin::Launcher,
        });
    }
    let mut env = Vec::new();
    let mut passed = BTreeMap::new();
    let dir_var = kind.dir_var();
    if !user_env.contains_key(dir_var) {
        env.push(Setting {
            name: dir_var.into(),
            value: format!("${{CACHE}}/{kind}"),
            reason: format!("{kind}'s local cache: the build sees no HOME, so it lives in the tool cache unless {dir_var} is set"),
            origin: SettingOrigin::Launcher,
        });
    }
    for (k, v) in user_env
        .iter()
        .filter(|(k, _)| k.starts_with(kind.prefix()))
    {
        env.push(Setting {
            name: k.clone(),
            value: FROM_ENV.into(),
            reason: format!(
                "{kind} setting passed through from your environment (value not recorded)"
            ),
            origin: SettingOrigin::Launcher,
        });
        passed.insert(k.clone(), v.clone());
    }
    Launcher {
        kind,
        tool: record,
        defines,
        env,
        passed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::host::Origin;
    use std::path::PathBuf;

    fn ccache() -> Tool {
        Tool {
            path: PathBuf::from("/usr/bin/ccache"),
            version: "4.7.5".parse().unwrap(),
            origin: Origin::System,
        }
    }

    #[test]
    fn ccache_wraps_c_cxx_and_chains_after_the_cuda_seed_script() {
        let l = plan(
            LauncherKind::Ccache,
            &ccache(),
            true,
            Some("${REPO}/toolchains/nvcc-seed.sh"),
            &BTreeMap::new(),
            Path::new("/c"),
        );
        let d: Vec<(&str, &str)> = l
            .defines
            .iter()
            .map(|s| (s.name.as_str(), s.value.as_str()))
            .collect();
        assert_eq!(
            d,
            [
                ("CMAKE_C_COMPILER_LAUNCHER", "/usr/bin/ccache"),
                ("CMAKE_CXX_COMPILER_LAUNCHER", "/usr/bin/ccache"),
                (
                    "CMAKE_CUDA_COMPILER_LAUNCHER",
                    "${REPO}/toolchains/nvcc-seed.sh;/usr/bin/ccache"
                ),
            ]
        );
        assert_eq!(l.env[0].name, "CCACHE_DIR");
        assert_eq!(l.env[0].value, "${CACHE}/ccache");
    }

    #[test]
    fn user_settings_pass_through_without_their_values() {
        let user: BTreeMap<String, String> = [
            ("SCCACHE_REDIS", "redis://:secret@host"),
            ("SCCACHE_DIR", "/shared/sccache"),
            ("CCACHE_DIR", "/x"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let l = plan(
            LauncherKind::Sccache,
            &ccache(),
            false,
            None,
            &user,
            Path::new("/c"),
        );
        let recorded = serde_json::to_string(&l).unwrap();
        assert!(
            !recorded.contains("secret") && !recorded.contains("/shared/sccache"),
            "{recorded}"
        );
        let env: BTreeMap<String, String> = l.build_env().collect();
        assert_eq!(env["SCCACHE_REDIS"], "redis://:secret@host");
        assert_eq!(env["SCCACHE_DIR"], "/shared/sccache");
        assert!(
            !env.contains_key("CCACHE_DIR"),
            "only the chosen tool's settings"
        );
        assert_eq!(l.defines.len(), 2, "no CUDA launcher for a CPU build");
    }
}
