//! The CUDA toolkits a build can use: those installed here, and those that can
//! be assembled from pinned wheels.

use anyhow::Result;

use super::env::Env;
use crate::versions::Version;

/// The CUDA toolkits that can be assembled from pinned wheels for a build on `host`
/// (provisioned at build time, nothing is downloaded here), in order of preference:
/// on Linux every pinned release; on Windows those with `[[windows_wheel]]` pins,
/// assembled by [`crate::provision::hermetic::install_windows`]. For a target of this
/// host's arch (on a DGX Spark the aarch64 wheels' toolkits): [`hermetic_offers_for`]
/// says what other targets get.
pub fn hermetic_offers(
    env: &Env,
    host: crate::platform::Os,
) -> Result<Vec<crate::detect::cuda::Toolkit>> {
    hermetic_offers_for(env, host, crate::platform::Arch::host())
}

/// [`hermetic_offers`] for a build whose target has CPU architecture `target`. x86-64:
/// as described there. aarch64 (sbsa), cross-built on Linux (x86-64): the releases with
/// `[[aarch64_wheel]]` pins, each a toolkit of its own in
/// `<cache>/cuda/<nvcc version>-aarch64/` (x86-64 nvcc, aarch64 runtime and cuBLAS in
/// `targets/sbsa-linux/lib`), assembled by [`crate::provision::hermetic::install_aarch64`]
/// from [`crate::provision::hermetic::CudaSpec::for_aarch64`]; on Windows none. aarch64
/// built on a Linux aarch64 host (a DGX Spark): the same releases, each the whole toolkit
/// of their aarch64 wheels in `<cache>/cuda/<nvcc version>/`
/// ([`crate::provision::hermetic::CudaSpec::for_aarch64_host`], assembled by
/// [`crate::provision::hermetic::install`] there).
pub fn hermetic_offers_for(
    env: &Env,
    host: crate::platform::Os,
    target: crate::platform::Arch,
) -> Result<Vec<crate::detect::cuda::Toolkit>> {
    hermetic_offers_on(env, host, crate::platform::Arch::host(), target)
}

/// [`hermetic_offers_for`] on a host of CPU architecture `host_arch`.
pub(crate) fn hermetic_offers_on(
    env: &Env,
    host: crate::platform::Os,
    host_arch: crate::platform::Arch,
    target: crate::platform::Arch,
) -> Result<Vec<crate::detect::cuda::Toolkit>> {
    use crate::platform::{Arch, Os};
    let mut out = Vec::new();
    // On a Linux aarch64 host (a DGX Spark) only builds for aarch64 get a pinned toolkit:
    // the aarch64 wheels' programs make no x86-64 code's toolkit.
    if host == Os::Linux && host_arch == Arch::Aarch64 && target != Arch::Aarch64 {
        return Ok(out);
    }
    for release in crate::cuda::pinned::offer_order() {
        let v: Version = release.parse().expect("static");
        let file = crate::provision::hermetic::toolkit_file(&v)?;
        let path = env.root.join("toolchains").join(&file);
        let spec = crate::provision::hermetic::CudaSpec::load(&env.root.join("toolchains"), &v)?;
        let (spec, root, exe) = match (host, target) {
            (Os::Linux, Arch::X86_64) => {
                let root = env.cache.join("cuda").join(spec.nvcc_version.to_string());
                (spec, root, "")
            }
            (_, Arch::Aarch64) if host == Os::Windows || spec.aarch64_wheels.is_empty() => continue,
            (Os::Linux, Arch::Aarch64) if host_arch == Arch::Aarch64 => {
                let spec = spec.for_aarch64_host()?;
                let root = env.cache.join("cuda").join(spec.nvcc_version.to_string());
                (spec, root, "")
            }
            (Os::Linux, Arch::Aarch64) => {
                let spec = spec.for_aarch64()?;
                let root = env
                    .cache
                    .join("cuda")
                    .join(format!("{}-aarch64", spec.nvcc_version));
                (spec, root, "")
            }
            (Os::Windows, _) if spec.windows_wheels.is_empty() => continue,
            (Os::Windows, _) => {
                let spec = spec.for_windows()?;
                let root = env
                    .cache
                    .join("cuda")
                    .join(format!("windows-{}", spec.nvcc_version));
                (spec, root, ".exe")
            }
        };
        let out_text = format!(
            "Cuda compilation tools, release {release}, V{}",
            spec.nvcc_version
        );
        out.push(crate::detect::cuda::Toolkit {
            nvcc: root.join(format!("bin/nvcc{exe}")),
            // The cuobjdump wheel is pinned separately (it starts at 13.2).
            cuobjdump: spec
                .wheels
                .iter()
                .find(|w| w.name == "nvidia-cuda-cuobjdump")
                .map(|w| (root.join(format!("bin/cuobjdump{exe}")), w.version.clone())),
            root,
            version: crate::cuda::NvccVersion::from_nvcc_output(&out_text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            origin: crate::platform::host::Origin::PinnedSet {
                file: format!("toolchains/{file}"),
                sha256: crate::digest::sha256_file(&path)?,
            },
            found_by: match target {
                _ if target == host_arch && target == Arch::Aarch64 => {
                    format!("pinned wheels in toolchains/{file} (aarch64 programs)")
                }
                Arch::X86_64 => format!("pinned wheels in toolchains/{file}"),
                _ => format!("pinned wheels in toolchains/{file} ({target} target libraries)"),
            },
            cuda_path_flag: false,
            lacks_target: None,
        });
    }
    Ok(out)
}

/// Every CUDA toolkit found, in priority order, with the version its nvcc
/// reports. With `cuda_path` (`--cuda-path`), that toolkit only: CUDACXX,
/// CUDA_PATH, CUDA_HOME, PATH and the usual locations are not looked at.
pub fn detect_cuda(
    cuda_path: Option<&std::path::Path>,
    env: &Env,
    log: &crate::report::Log,
    procs: &dyn crate::process::Processes,
) -> Result<Vec<crate::detect::cuda::Toolkit>> {
    use crate::cuda;
    let mut inputs = crate::detect::cuda::DiscoveryInputs::new(crate::platform::Os::host());
    match cuda_path {
        Some(dir) => {
            inputs.cuda_path_flag = Some(dir.to_path_buf());
            inputs.system.clear();
        }
        None => {
            inputs.cudacxx = env.cudacxx.clone();
            inputs.cuda_path = env.cuda_path.clone();
            inputs.cuda_home = env.cuda_home.clone();
            inputs.path = std::env::split_paths(&env.path).collect();
        }
    }
    if let Some(bad) = crate::detect::cuda::unresolved_inputs(&inputs)
        .into_iter()
        .next()
    {
        anyhow::bail!("{bad}");
    }
    let mut found = Vec::new();
    for c in crate::detect::cuda::discover_nvcc(&inputs) {
        let flag = c
            .sources
            .contains(&crate::detect::cuda::NvccSource::CudaPathFlag);
        let Some(out) = crate::detect::toolchain::version_output(&c.nvcc, "--version", procs)
        else {
            if flag {
                anyhow::bail!("--cuda-path {}: {} does not run (`{} --version` fails): give a working CUDA toolkit root", c.root.display(), c.nvcc.display(), c.nvcc.display());
            }
            log.warning(format_args!("{} does not run; skipped", c.nvcc.display()));
            continue;
        };
        let version = cuda::NvccVersion::from_nvcc_output(&out)
            .map_err(|e| anyhow::anyhow!("{}: {e}", c.nvcc.display()))?;
        let own_version = Version::from(version.nvcc);
        let cuobjdump = Some(c.root.join("bin/cuobjdump"))
            .filter(|p| p.is_file())
            .map(|p| (p, own_version));
        let found_by = c
            .sources
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        found.push(crate::detect::cuda::Toolkit {
            root: c.root.clone(),
            nvcc: c.nvcc.clone(),
            version,
            origin: crate::platform::host::Origin::System,
            cuobjdump,
            found_by,
            cuda_path_flag: flag,
            lacks_target: None,
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::env::test_env as env;
    use std::path::PathBuf;

    /// The package index's toolkits are offered in `offer_order`: the GPU-checked
    /// release first, then the others newest first, each from its pin file;
    /// nothing is installed or downloaded to offer them.
    #[test]
    fn offers_are_the_gpu_checked_release_then_the_others_newest_first() {
        let d = tempfile::tempdir().unwrap();
        let env = Env {
            root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
            cache: d.path().to_path_buf(),
            ..env()
        };
        let offers = hermetic_offers(&env, crate::platform::Os::Linux).unwrap();
        let got: Vec<(String, String)> = offers
            .iter()
            .map(|t| (t.version.nvcc.to_string(), t.found_by.clone()))
            .collect();
        let want: Vec<(String, String)> = [
            ("13.5.37", "13.5"),
            ("13.0.88", "13.0"),
            ("13.4.92", "13.4"),
            ("13.3.73", "13.3"),
            ("13.2.86", "13.2"),
            ("13.1.115", "13.1"),
        ]
        .iter()
        .map(|(nvcc, r)| {
            (
                nvcc.to_string(),
                format!("pinned wheels in toolchains/cuda-{r}.toml"),
            )
        })
        .collect();
        assert_eq!(got, want);
        assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
        let cuobjdump = |i: usize| offers[i].cuobjdump.as_ref().map(|(_, v)| v.to_string());
        assert_eq!(cuobjdump(0), Some("13.5.37".into()));
        // 13.0 has no cuobjdump wheel of its own: its pin takes 13.2's.
        assert_eq!(cuobjdump(1), Some("13.2.86".into()));

        // On Windows: the releases with Windows wheels pinned (every one), in the same
        // order, each in its own dir, with nvcc.exe.
        let win = hermetic_offers(&env, crate::platform::Os::Windows).unwrap();
        let got: Vec<(String, PathBuf)> = win
            .iter()
            .map(|t| (t.version.nvcc.to_string(), t.nvcc.clone()))
            .collect();
        let want: Vec<(String, PathBuf)> = offers
            .iter()
            .map(|t| {
                let nvcc = t.version.nvcc.to_string();
                let exe = d.path().join(format!("cuda/windows-{nvcc}/bin/nvcc.exe"));
                (nvcc, exe)
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(got[0].0, "13.5.37");
        assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());

        // x86-64 asked for by name: the same offers, byte for byte.
        let x86 = hermetic_offers_for(
            &env,
            crate::platform::Os::Linux,
            crate::platform::Arch::X86_64,
        )
        .unwrap();
        assert_eq!(format!("{x86:?}"), format!("{offers:?}"));
    }

    /// For an aarch64 target: every release with aarch64 pins (all six), in the same
    /// order, each in its own `-aarch64` root with the x86-64 nvcc and cuobjdump;
    /// nothing on Windows; nothing installed to offer them.
    #[test]
    fn aarch64_offers_have_their_own_roots() {
        use crate::platform::{Arch, Os};
        let d = tempfile::tempdir().unwrap();
        let env = Env {
            root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
            cache: d.path().to_path_buf(),
            ..env()
        };
        let x86 = hermetic_offers(&env, Os::Linux).unwrap();
        let arm = hermetic_offers_for(&env, Os::Linux, Arch::Aarch64).unwrap();
        assert_eq!(arm.len(), x86.len());
        for (a, x) in arm.iter().zip(&x86) {
            let nvcc = a.version.nvcc.to_string();
            assert_eq!(a.version.nvcc, x.version.nvcc);
            assert_eq!(a.root, d.path().join(format!("cuda/{nvcc}-aarch64")));
            assert_eq!(a.nvcc, a.root.join("bin/nvcc"));
            assert_eq!(
                a.cuobjdump.as_ref().map(|(p, v)| (p.clone(), v.clone())),
                x.cuobjdump
                    .as_ref()
                    .map(|(_, v)| (a.root.join("bin/cuobjdump"), v.clone()))
            );
            assert_eq!(a.origin, x.origin, "the same pin file");
            assert!(
                a.found_by.ends_with("(aarch64 target libraries)"),
                "{}",
                a.found_by
            );
        }
        assert!(hermetic_offers_for(&env, Os::Windows, Arch::Aarch64)
            .unwrap()
            .is_empty());
        assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
    }
    /// On an aarch64 host (a DGX Spark): each release's whole aarch64 toolkit at
    /// `<cache>/cuda/<nvcc>` (nvcc and cuobjdump there are aarch64 programs), in the same
    /// order; nothing for an x86-64 target; nothing installed to offer them.
    #[test]
    fn an_aarch64_host_is_offered_the_aarch64_wheels_toolkits() {
        use crate::platform::{Arch, Os};
        let d = tempfile::tempdir().unwrap();
        let env = Env {
            root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
            cache: d.path().to_path_buf(),
            ..env()
        };
        let x86 = hermetic_offers_on(&env, Os::Linux, Arch::X86_64, Arch::X86_64).unwrap();
        let spark = hermetic_offers_on(&env, Os::Linux, Arch::Aarch64, Arch::Aarch64).unwrap();
        assert_eq!(spark.len(), 6);
        for (a, x) in spark.iter().zip(&x86) {
            let nvcc = a.version.nvcc.to_string();
            assert_eq!(a.version.nvcc, x.version.nvcc);
            assert_eq!(a.root, d.path().join(format!("cuda/{nvcc}")));
            assert_eq!(a.nvcc, a.root.join("bin/nvcc"));
            assert_eq!(
                a.cuobjdump.as_ref().map(|(_, v)| v),
                x.cuobjdump.as_ref().map(|(_, v)| v)
            );
            assert_eq!(a.origin, x.origin, "the same pin file");
            assert!(a.found_by.ends_with("(aarch64 programs)"), "{}", a.found_by);
        }
        assert!(
            hermetic_offers_on(&env, Os::Linux, Arch::Aarch64, Arch::X86_64)
                .unwrap()
                .is_empty()
        );
        assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
    }
}
