//! The process environment, read once: every stage takes an [`Env`] instead of
//! reading variables itself.

use std::path::{Path, PathBuf};

use crate::platform::msvc;

/// Where the stable build paths live unless `LLAMA_FORGE_STABLE_DIR` says otherwise
/// (`build::stable` says why one path for every user and machine).
pub const DEFAULT_STABLE_DIR: &str = "/tmp/llama-forge";

/// What the tool reads from its environment, read once in `main`
/// ([`Env::from_process`] is the one place the process environment is read).
#[derive(Debug, Clone)]
pub struct Env {
    pub root: PathBuf,
    pub path: String,
    pub cc: Option<String>,
    pub cxx: Option<String>,
    pub cudacxx: Option<PathBuf>,
    pub cuda_path: Option<PathBuf>,
    pub cuda_home: Option<PathBuf>,
    /// `LLAMA_FORGE_CACHE`: downloads and provisioned tools; by default the user
    /// cache, shared by every checkout ([`user_cache`]).
    pub cache: PathBuf,
    /// Whether `cache` is the default (no `LLAMA_FORGE_CACHE`): then a checkout's old
    /// `vendor/cache` is pointed out.
    pub cache_is_default: bool,
    /// `LLAMA_FORGE_BUILD_DIR`: work dirs.
    pub build_root: PathBuf,
    /// `LLAMA_FORGE_STABLE_DIR`: where the stable build paths live (default `/tmp/llama-forge`).
    pub stable_dir: PathBuf,
    /// `LLAMA_FORGE_RECIPES`: the recipe dir (default `recipes/`).
    pub recipes: PathBuf,
    /// `HOME`: searched for in built binaries (`verify`), never passed to a build.
    pub home: Option<PathBuf>,
    /// `CCACHE_*`, `SCCACHE_*` and `AWS_*` (sccache's S3 credentials): passed to the
    /// build when `--launcher` names that tool.
    pub launcher_env: std::collections::BTreeMap<String, String>,
    /// `LLAMA_FORGE_SCCACHE`: the sccache `--launcher sccache` runs instead of the pinned one.
    pub sccache: Option<PathBuf>,
    /// `%ProgramFiles(x86)%`: where vswhere.exe is (Windows).
    pub program_files_x86: Option<PathBuf>,
    /// Windows: the system variables the vcvars capture runs with
    /// ([`msvc::BASE_VARS`]) and, in a Developer Command Prompt, the MSVC ones
    /// ([`crate::platform::msvc::env::MSVC_ENV_VARS`], `VisualStudioVersion`). Empty elsewhere.
    pub windows_vars: std::collections::BTreeMap<String, String>,
    /// `VIRTUAL_ENV`: the active venv, whose Python `doctor` checks by default.
    pub virtual_env: Option<PathBuf>,
    /// `LLAMA_FORGE_HEARTBEAT_SECS`: how often a long step says where it is off a
    /// terminal (default 30 s; the tests' mini builds set 0.2).
    pub heartbeat: std::time::Duration,
    /// `NO_COLOR` set to anything but empty (no-color.org): no colour with `--color auto`.
    /// `FORCE_COLOR` set to anything but empty (force-color.org): colour with `--color
    /// auto` off a terminal too, unless NO_COLOR is set.
    pub force_color: bool,
    pub no_color: bool,
    /// `LLAMA_FORGE_NVIDIA_SMI`: the one nvidia-smi `--arch auto` asks for this machine's
    /// GPUs, instead of NVML and the nvidia-smi on PATH (a path that does not exist: no GPU).
    pub nvidia_smi: Option<PathBuf>,
    /// `LLAMA_FORGE_INDEX_URL`: the package index (a simple API root, PEP 691) that
    /// releases a recipe does not pin are resolved from, instead of the recipe's.
    pub index_url: Option<String>,
    /// GitHub's API root, where the build number of a llama.cpp commit vendored by an
    /// unpinned release is asked: `LLAMA_FORGE_GITHUB_API_URL` (a mirror's), else
    /// [`GITHUB_API`].
    pub github_api: String,
    /// `CMAKE_ARGS`, what pip builds of llama-cpp-python read: not read by a build here
    /// (the plan decides every define), only named in a warning.
    pub cmake_args: Option<String>,
    /// The proxies downloads go through, as pip's and curl's: see [`Proxies`].
    pub proxies: Proxies,
    /// The user config dir (`$XDG_CONFIG_HOME`, `~/.config`, `%APPDATA%`): where a user's
    /// `llama-forge/llama-forge.toml` gives defaults.
    pub config_dir: Option<PathBuf>,
    /// Every `LLAMA_FORGE_*` variable set (not empty), by name: those named after a build
    /// option (`LLAMA_FORGE_ARCH`) give its default (`commands::defaults`).
    pub option_defaults: std::collections::BTreeMap<String, String>,
    /// `LLAMA_FORGE_SIGNING_KEY`: the text of the secret key `--cache-to` signs with
    /// (a CI secret), where `--sign-key` names no file; `LLAMA_FORGE_SIGNING_KEY_PASSWORD`:
    /// its password, where it is encrypted.
    pub signing_key: Option<String>,
    pub signing_password: Option<String>,
}

/// The proxy variables, as pip (requests) and curl read them: an https URL goes through
/// `HTTPS_PROXY`, an http one through `HTTP_PROXY`, either through `ALL_PROXY` where its
/// own is not set; not for the hosts `NO_PROXY` lists. Each name is read lower-case
/// first, then upper-case; an empty value is not set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proxies {
    pub https: Option<String>,
    pub http: Option<String>,
    /// Comma-separated hosts (`example.com`), suffixes (`.example.com`), or `*`.
    pub no_proxy: Option<String>,
}

impl Proxies {
    /// The proxies `var` (an environment's reader) names.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Proxies {
        let either = |name: &str| var(&name.to_lowercase()).or_else(|| var(name));
        let all = either("ALL_PROXY");
        Proxies {
            https: either("HTTPS_PROXY").or_else(|| all.clone()),
            http: either("HTTP_PROXY").or(all),
            no_proxy: either("NO_PROXY"),
        }
    }
}

/// GitHub's API root, where `LLAMA_FORGE_GITHUB_API_URL` does not name another.
pub const GITHUB_API: &str = "https://api.github.com";

impl Env {
    pub fn from_process() -> Env {
        // The checkout: `LLAMA_FORGE_ROOT`, else the one the current dir is in (as cargo
        // finds its workspace), else the one this binary was built in.
        let cwd = std::env::current_dir().unwrap_or_default();
        let root = match std::env::var_os("LLAMA_FORGE_ROOT") {
            Some(r) if !r.is_empty() => against(&cwd, PathBuf::from(r)),
            _ => checkout_above(&cwd).unwrap_or_else(crate::repo_root),
        };
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        // The tool's own dirs, made absolute here: a build runs its tools in other dirs.
        let dir = |k: &str| var(k).map(|v| against(&cwd, PathBuf::from(v)));
        Env {
            path: var("PATH").unwrap_or_default(),
            cc: var("CC"),
            cxx: var("CXX"),
            cudacxx: var("CUDACXX").map(PathBuf::from),
            cuda_path: var("CUDA_PATH").map(PathBuf::from),
            cuda_home: var("CUDA_HOME").map(PathBuf::from),
            cache_is_default: var("LLAMA_FORGE_CACHE").is_none(),
            cache: dir("LLAMA_FORGE_CACHE").unwrap_or_else(|| {
                user_cache(
                    crate::platform::Os::host(),
                    var("XDG_CACHE_HOME").map(PathBuf::from),
                    var("HOME").map(PathBuf::from),
                    var("LOCALAPPDATA").map(PathBuf::from),
                )
                .unwrap_or_else(|| root.join("vendor/cache"))
            }),
            build_root: dir("LLAMA_FORGE_BUILD_DIR").unwrap_or_else(|| root.join(".build")),
            stable_dir: dir("LLAMA_FORGE_STABLE_DIR")
                .unwrap_or_else(|| PathBuf::from(DEFAULT_STABLE_DIR)),
            recipes: dir("LLAMA_FORGE_RECIPES").unwrap_or_else(|| root.join("recipes")),
            launcher_env: std::env::vars()
                .filter(|(k, v)| {
                    ["CCACHE_", "SCCACHE_", "AWS_"]
                        .iter()
                        .any(|p| k.starts_with(p))
                        && !v.is_empty()
                })
                .collect(),
            sccache: var("LLAMA_FORGE_SCCACHE").map(PathBuf::from),
            home: var("HOME").map(PathBuf::from),
            program_files_x86: var("ProgramFiles(x86)").map(PathBuf::from),
            windows_vars: if crate::platform::Os::host() == crate::platform::Os::Windows {
                msvc::BASE_VARS
                    .iter()
                    .chain(crate::platform::msvc::env::MSVC_ENV_VARS)
                    .chain(&["VisualStudioVersion"])
                    .filter_map(|k| var(k).map(|v| (k.to_string(), v)))
                    .collect()
            } else {
                Default::default()
            },
            virtual_env: var("VIRTUAL_ENV").map(PathBuf::from),
            nvidia_smi: var("LLAMA_FORGE_NVIDIA_SMI").map(PathBuf::from),
            index_url: var("LLAMA_FORGE_INDEX_URL"),
            github_api: var("LLAMA_FORGE_GITHUB_API_URL").unwrap_or_else(|| GITHUB_API.into()),
            cmake_args: var("CMAKE_ARGS"),
            proxies: Proxies::from_vars(var),
            config_dir: match crate::platform::Os::host() {
                crate::platform::Os::Windows => var("APPDATA").map(PathBuf::from),
                crate::platform::Os::Linux => var("XDG_CONFIG_HOME")
                    .map(PathBuf::from)
                    .filter(|p| p.is_absolute())
                    .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config"))),
            },
            option_defaults: std::env::vars()
                .filter(|(k, v)| {
                    k.starts_with("LLAMA_FORGE_") && !k.contains("SIGNING") && !v.is_empty()
                })
                .collect(),
            signing_key: var("LLAMA_FORGE_SIGNING_KEY"),
            signing_password: var("LLAMA_FORGE_SIGNING_KEY_PASSWORD"),
            no_color: var("NO_COLOR").is_some(),
            force_color: var("FORCE_COLOR").is_some(),
            heartbeat: var("LLAMA_FORGE_HEARTBEAT_SECS")
                .and_then(|s| s.parse().ok())
                .filter(|&s: &f64| s > 0.0 && s < 86400.0)
                .map(std::time::Duration::from_secs_f64)
                .unwrap_or(crate::report::HEARTBEAT),
            root,
        }
    }
}

/// `path` as given in the environment, against the directory the tool was started in
/// (a relative `LLAMA_FORGE_CACHE=vendor/cache` named tools that CMake, started in the
/// build dir, could not find).
/// The llama-forge checkout `dir` is in: the nearest of it and its parents that holds
/// `recipes/` and `toolchains/nvcc-support.toml`.
pub fn checkout_above(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join("recipes").is_dir() && d.join("toolchains/nvcc-support.toml").is_file())
        .map(Path::to_path_buf)
}

fn against(cwd: &Path, path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        path
    } else {
        cwd.join(path)
    }
}

/// The user cache: `%LOCALAPPDATA%\llama-forge` on Windows; elsewhere
/// `$XDG_CACHE_HOME/llama-forge`, else `~/.cache/llama-forge` (an `XDG_CACHE_HOME` that is
/// not absolute is ignored, as the XDG spec says). `None` without a home to put it in.
pub fn user_cache(
    os: crate::platform::Os,
    xdg_cache_home: Option<PathBuf>,
    home: Option<PathBuf>,
    local_app_data: Option<PathBuf>,
) -> Option<PathBuf> {
    let base = match os {
        crate::platform::Os::Windows => local_app_data,
        crate::platform::Os::Linux => xdg_cache_home
            .filter(|p| p.is_absolute())
            .or_else(|| home.map(|h| h.join(".cache"))),
    };
    base.map(|b| b.join("llama-forge"))
}

/// An environment for tests: nothing of this machine's.
#[cfg(test)]
pub(crate) fn test_env() -> Env {
    Env {
        root: PathBuf::from("/nonexistent/checkout"),
        path: String::new(),
        cc: None,
        cxx: None,
        cudacxx: None,
        cuda_path: None,
        cuda_home: None,
        cache: PathBuf::from("/nonexistent/cache"),
        cache_is_default: false,
        build_root: PathBuf::from("/nonexistent/build"),
        stable_dir: PathBuf::from("/nonexistent/stable"),
        recipes: PathBuf::from("/nonexistent/recipes"),
        home: None,
        launcher_env: Default::default(),
        sccache: None,
        program_files_x86: Some(PathBuf::from(r"C:\Program Files (x86)")),
        windows_vars: [("SystemRoot", r"C:\Windows")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        virtual_env: None,
        nvidia_smi: None,
        index_url: None,
        github_api: GITHUB_API.into(),
        cmake_args: None,
        proxies: Proxies::default(),
        config_dir: None,
        option_defaults: Default::default(),
        signing_key: None,
        signing_password: None,
        no_color: false,
        force_color: false,
        heartbeat: crate::report::HEARTBEAT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Os;

    /// A relative dir from the environment is the one under the dir the tool started in.
    #[test]
    fn relative_dirs_are_taken_from_where_the_tool_started() {
        let cwd = Path::new("/home/ann/llama-forge");
        assert_eq!(
            against(cwd, PathBuf::from("vendor/cache")),
            Path::new("/home/ann/llama-forge/vendor/cache")
        );
        assert_eq!(
            against(cwd, PathBuf::from("/srv/cache")),
            Path::new("/srv/cache")
        );
    }

    #[test]
    fn proxies_are_read_as_pip_and_curl_read_them() {
        let from = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Proxies::from_vars(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
        };
        assert_eq!(from(&[]), Proxies::default());
        let p = from(&[
            ("ALL_PROXY", "http://all:1"),
            ("HTTPS_PROXY", "http://upper:2"),
            ("https_proxy", "http://lower:3"),
            ("NO_PROXY", "localhost,.internal"),
        ]);
        assert_eq!(p.https.as_deref(), Some("http://lower:3"));
        assert_eq!(p.http.as_deref(), Some("http://all:1"));
        assert_eq!(p.no_proxy.as_deref(), Some("localhost,.internal"));
    }

    #[test]
    fn the_user_cache_follows_xdg_and_windows_conventions() {
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(
            user_cache(Os::Linux, p("/x/cache"), p("/home/a"), None),
            p("/x/cache/llama-forge")
        );
        assert_eq!(
            user_cache(Os::Linux, p("relative"), p("/home/a"), None),
            p("/home/a/.cache/llama-forge")
        );
        assert_eq!(
            user_cache(Os::Linux, None, p("/home/a"), None),
            p("/home/a/.cache/llama-forge")
        );
        assert_eq!(user_cache(Os::Linux, None, None, None), None);
        assert_eq!(
            user_cache(
                Os::Windows,
                None,
                p("/home/a"),
                p(r"C:\Users\a\AppData\Local")
            ),
            Some(PathBuf::from(r"C:\Users\a\AppData\Local").join("llama-forge"))
        );
    }
}
