//! What to type next, once artifacts are in dist/: lines that work as printed (pure).
//!
//! A wheel goes into a fresh virtual environment (Debian 12, Ubuntu 24.04, WSL2's default
//! distro and DGX OS refuse `pip install` into the system Python, PEP 668), by its exact
//! version with its local label from dist/ (`--find-links`), its dependencies from the
//! usual index: the package index refuses local versions, so no one can shadow it there,
//! and one line serves one `py3` wheel and a wheel per Python alike. Windows' shells get
//! their own lines (cmd and PowerShell: no `&&`, no globs, double quotes).

use std::path::Path;

use crate::plan::{Package, Plan};
use crate::platform::Os;

/// A size as people read it: `29 kB` under a megabyte, else `4.9 MB`.
pub fn size(bytes: u64) -> String {
    match bytes {
        0..=999 => format!("{bytes} bytes"),
        1_000..=999_999 => format!("{} kB", (bytes + 500) / 1000),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// The lines to print after a build into `dist` of `artifacts` (their file names), for
/// someone on `host`.
pub fn next(plan: &Plan, dist: &Path, artifacts: &[String], host: Os) -> Vec<String> {
    let target = plan.target;
    let elsewhere = target.os() != host || target.arch() != crate::platform::Arch::host();
    let on = |what: &str| {
        if elsewhere {
            format!(
                "{what}, on the machine it is for ({target}), in the dir the files are copied to:"
            )
        } else {
            format!("{what}:")
        }
    };
    match &plan.package {
        Package::Wheel { project, local, .. } => {
            let spec = format!("{project}=={}+{local}", plan.version);
            let (from, venv, pip) = match target.os() {
                Os::Linux => (
                    if elsewhere {
                        ".".to_string()
                    } else {
                        sh_quote(&dist.display().to_string())
                    },
                    "python3 -m venv .venv".to_string(),
                    format!(
                        ".venv/bin/python -m pip install --find-links {{from}} {}",
                        sh_quote(&spec)
                    ),
                ),
                Os::Windows => (
                    if elsewhere {
                        ".".to_string()
                    } else {
                        format!("\"{}\"", dist.display())
                    },
                    "py -m venv .venv".to_string(),
                    format!(
                        ".venv\\Scripts\\python -m pip install --find-links {{from}} \"{spec}\""
                    ),
                ),
            };
            vec![
                on("install it into a new virtual environment"),
                format!("  {venv}"),
                format!("  {}", pip.replace("{from}", &from)),
            ]
        }
        Package::Archive { .. } => {
            let mut out = vec![on("unpack it")];
            for a in artifacts {
                let path = if elsewhere {
                    a.clone()
                } else {
                    dist.join(a).display().to_string()
                };
                out.push(match target.os() {
                    Os::Linux => format!("  tar xzf {}", sh_quote(&path)),
                    Os::Windows => format!("  tar -xf \"{path}\""),
                });
            }
            out
        }
    }
}

/// The lines that install `spec` (`llama-cpp-python==0.3.36+cpu`, its exact local
/// version) into a new virtual environment from the PEP 503 index at `index` (an absolute
/// dir), its dependencies from the package index, for someone on `host`: with pip, then
/// with uv. `--extra-index-url`, not `--index-url`: the flavour's index holds only our
/// wheel, so pip and uv must find numpy and the rest on the package index, where the pin's
/// local version cannot be (the index refuses local versions), so nothing there stands in
/// for the wheel. (uv asks the extra index first, and takes our project from it alone.)
pub fn from_index(spec: &str, index: &Path, host: Os) -> Vec<String> {
    let url = url::Url::from_directory_path(index)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{}", index.display()));
    let (venv, python, spec) = match host {
        Os::Linux => ("python3 -m venv .venv", ".venv/bin/python", sh_quote(spec)),
        Os::Windows => (
            "py -m venv .venv",
            ".venv\\Scripts\\python",
            format!("\"{spec}\""),
        ),
    };
    vec![
        "with pip:".to_string(),
        format!("  {venv}"),
        format!("  {python} -m pip install --extra-index-url {url} {spec}"),
        "with uv:".to_string(),
        "  uv venv".to_string(),
        format!("  uv pip install --extra-index-url {url} {spec}"),
    ]
}

/// `s` as one word of a POSIX shell: as it is where it needs no quotes, else in `'...'`.
fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_people_read_them() {
        assert_eq!(size(14_000), "14 kB");
        assert_eq!(size(29_499), "29 kB");
        assert_eq!(size(999), "999 bytes");
        assert_eq!(size(4_867_000), "4.9 MB");
    }

    #[test]
    fn a_wheel_goes_into_a_venv_by_its_exact_version() {
        let plan = crate::plan::tests::fixture_plan("llama-cpp-python", &[]);
        let lines = next(
            &plan,
            Path::new("/home/me/my checkout/dist"),
            &[],
            Os::Linux,
        );
        assert_eq!(
            lines,
            vec![
                "install it into a new virtual environment:".to_string(),
                "  python3 -m venv .venv".to_string(),
                format!(
                    "  .venv/bin/python -m pip install --find-links '/home/me/my checkout/dist' {}",
                    sh_quote(&format!("llama-cpp-python=={}+cpu", plan.version))
                ),
            ]
        );
    }

    #[test]
    fn a_windows_wheel_built_on_linux_is_installed_there() {
        let mut plan = crate::plan::tests::fixture_plan("llama-cpp-python", &[]);
        plan.target = crate::platform::Target::WINDOWS_GNU;
        let lines = next(&plan, Path::new("/home/me/dist"), &[], Os::Linux);
        assert_eq!(lines[1], "  py -m venv .venv");
        assert!(
            lines[2].starts_with(
                "  .venv\\Scripts\\python -m pip install --find-links . \"llama-cpp-python=="
            ),
            "{lines:?}"
        );
        assert!(lines[0].contains("x86_64-pc-windows-gnu"), "{lines:?}");
    }

    #[test]
    fn a_flavour_index_with_the_dependencies_from_the_package_index() {
        let lines = from_index(
            "llama-cpp-python==0.3.36+cpu",
            Path::new("/home/me/my dist/cpu/simple"),
            Os::Linux,
        );
        assert_eq!(
            lines,
            [
                "with pip:",
                "  python3 -m venv .venv",
                "  .venv/bin/python -m pip install --extra-index-url file:///home/me/my%20dist/cpu/simple/ llama-cpp-python==0.3.36+cpu",
                "with uv:",
                "  uv venv",
                "  uv pip install --extra-index-url file:///home/me/my%20dist/cpu/simple/ llama-cpp-python==0.3.36+cpu",
            ]
        );
    }

    #[test]
    fn shell_words() {
        assert_eq!(sh_quote("/a/b+c.whl"), "/a/b+c.whl");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
    }
}
