//! Chooses a wheel's platform tag from what its libraries need, using the
//! policy table in `toolchains/manylinux.toml`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::binary::elf::ElfInfo;
use crate::tags::PlatformTag;
use crate::versions::Version;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policies {
    pub allowed_libs: BTreeSet<String>,
    #[serde(rename = "policy")]
    pub policies: Vec<Policy>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub glibc: u32,
    /// Newest numeric version per prefix (`GLIBC`, `GLIBCXX`, `CXXABI`, `GCC`).
    pub max: BTreeMap<String, Version>,
    /// Non-numeric versions allowed (`CXXABI_TM_1`).
    pub named: BTreeSet<String>,
}

/// Why a set of libraries fits no manylinux policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotManylinux(pub Vec<String>);

/// A library that binaries of an artifact need and nothing supplies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupplied {
    /// The NEEDED entry: `libnccl.so.2`.
    pub library: String,
    /// The artifact's files that need it.
    pub needed_by: Vec<String>,
}

impl Policies {
    pub fn builtin() -> Policies {
        toml::from_str(include_str!("../../../toolchains/manylinux.toml"))
            .expect("toolchains/manylinux.toml is valid")
    }

    /// Whether a system library may be linked without bundling it, by code for `arch`:
    /// the allow-list, with the dynamic loader of that arch only (`ld-linux-x86-64.so.2`,
    /// `ld-linux-aarch64.so.1`).
    pub fn allows_lib(&self, name: &str, arch: crate::platform::Arch) -> bool {
        if name.starts_with("ld-linux") {
            return name == arch.glibc_loader();
        }
        self.allowed_libs.contains(name)
    }

    /// Every library that `libs` (by their path in the artifact) need which is not
    /// inside the artifact (`bundled`), not declared (`declared`: the CUDA runtime
    /// wheels, the driver) and not in the allow-list: the machine they run on would
    /// have to happen to have it.
    pub fn unsupplied(
        &self,
        libs: &BTreeMap<String, ElfInfo>,
        bundled: &BTreeSet<String>,
        declared: &BTreeSet<String>,
    ) -> Vec<Unsupplied> {
        let mut by_lib: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (path, info) in libs {
            let arch = info.arch.unwrap_or(crate::platform::Arch::X86_64);
            for n in &info.needed {
                if !bundled.contains(n) && !declared.contains(n) && !self.allows_lib(n, arch) {
                    by_lib.entry(n).or_default().push(path.clone());
                }
            }
        }
        by_lib
            .into_iter()
            .map(|(l, needed_by)| Unsupplied {
                library: l.to_string(),
                needed_by,
            })
            .collect()
    }

    /// The glibc minor of the oldest policy whose symbol versions cover every one of
    /// `required` (`GLIBC_2.17`, `GLIBCXX_3.4.19`); None when no policy does.
    pub fn oldest_glibc_for(&self, required: &BTreeSet<&String>) -> Option<u32> {
        self.policies
            .iter()
            .find(|p| required.iter().all(|v| p.allows(v)))
            .map(|p| p.glibc)
    }

    /// The manylinux tag (`manylinux_2_28_x86_64`) that one library's symbol versions on
    /// the allow-listed system libraries (libc, libm, libstdc++, libgcc_s...) imply, or
    /// why none does: what `inspect` reports for anyone's library.
    pub fn implied_by(&self, info: &ElfInfo) -> Result<PlatformTag, NotManylinux> {
        let required: BTreeSet<&String> = info
            .version_needs
            .iter()
            .filter(|(f, _)| self.allowed_libs.contains(*f))
            .flat_map(|(_, v)| v)
            .collect();
        let Some(arch) = info.arch else {
            return Err(NotManylinux(vec![format!(
                "its code is for {}: manylinux tags exist here for x86_64 and aarch64",
                crate::binary::elf::machine_name(None)
            )]));
        };
        match self.oldest_glibc_for(&required) {
            Some(glibc_minor) => Ok(PlatformTag::Manylinux { glibc_minor, arch }),
            None => Err(NotManylinux(vec![
                "needs symbol versions newer than any known manylinux policy".into(),
            ])),
        }
    }

    /// The oldest policy that every library satisfies. `bundled` are the
    /// libraries inside the wheel (their NEEDED entries are satisfied).
    pub fn tag_for(
        &self,
        libs: &[ElfInfo],
        bundled: &BTreeSet<String>,
    ) -> Result<PlatformTag, NotManylinux> {
        let mut problems = Vec::new();
        let arches: BTreeSet<Option<crate::platform::Arch>> = libs.iter().map(|l| l.arch).collect();
        let arch = match arches.into_iter().collect::<Vec<_>>()[..] {
            [Some(a)] => a,
            [] => crate::platform::Arch::X86_64,
            ref several => {
                return Err(NotManylinux(vec![format!(
                    "its libraries are for different CPUs: {}",
                    several
                        .iter()
                        .map(|a| crate::binary::elf::machine_name(*a))
                        .collect::<Vec<_>>()
                        .join(", ")
                )]))
            }
        };
        for l in libs {
            for n in &l.needed {
                if !bundled.contains(n) && !self.allows_lib(n, arch) {
                    problems.push(format!(
                        "needs {n}, which is neither in the wheel nor in the manylinux allow-list"
                    ));
                }
            }
        }
        if !problems.is_empty() {
            problems.sort();
            problems.dedup();
            return Err(NotManylinux(problems));
        }
        let required: BTreeSet<&String> = libs
            .iter()
            .flat_map(|l| {
                l.version_needs
                    .iter()
                    .filter(|(f, _)| !bundled.contains(*f))
                    .flat_map(|(_, v)| v)
            })
            .collect();
        if let Some(glibc_minor) = self.oldest_glibc_for(&required) {
            return Ok(PlatformTag::Manylinux { glibc_minor, arch });
        }
        let newest = self.policies.last().expect("table has policies");
        let mut too_new: Vec<String> = required
            .iter()
            .filter(|v| !newest.allows(v))
            .map(|&v| v.clone())
            .collect();
        too_new.sort();
        Err(NotManylinux(vec![format!(
            "needs symbol versions newer than any known policy: {}",
            too_new.join(", ")
        )]))
    }
}

impl Policy {
    fn allows(&self, version: &str) -> bool {
        if self.named.contains(version) {
            return true;
        }
        let Some((prefix, num)) = version.rsplit_once('_') else {
            return false;
        };
        match (self.max.get(prefix), num.parse::<Version>()) {
            (Some(max), Ok(v)) => max.at_least(&v),
            // A prefix the table does not govern (a bundled library's own versions).
            (None, _) => true,
            (Some(_), Err(_)) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(needed: &[&str], versions: &[(&str, &[&str])]) -> ElfInfo {
        ElfInfo {
            needed: needed.iter().map(|s| s.to_string()).collect(),
            version_needs: versions
                .iter()
                .map(|(f, vs)| (f.to_string(), vs.iter().map(|s| s.to_string()).collect()))
                .collect(),
            arch: Some(crate::platform::Arch::X86_64),
            ..Default::default()
        }
    }

    #[test]
    fn picks_oldest_policy_covering_glibc_and_glibcxx() {
        let p = Policies::builtin();
        let l = lib(
            &["libc.so.6", "libstdc++.so.6"],
            &[
                ("libc.so.6", &["GLIBC_2.17", "GLIBC_2.34"]),
                ("libstdc++.so.6", &["GLIBCXX_3.4.29", "CXXABI_1.3.13"]),
            ],
        );
        assert_eq!(
            p.tag_for(&[l], &BTreeSet::new()).unwrap().to_string(),
            "manylinux_2_34_x86_64"
        );
        // GLIBCXX_3.4.30 (GCC 12's libstdc++) pushes a glibc 2.34 library to 2_35.
        let l = lib(
            &["libstdc++.so.6"],
            &[
                ("libc.so.6", &["GLIBC_2.34"]),
                ("libstdc++.so.6", &["GLIBCXX_3.4.30"]),
            ],
        );
        assert_eq!(
            p.tag_for(&[l], &BTreeSet::new()).unwrap().to_string(),
            "manylinux_2_35_x86_64"
        );
        let l = lib(
            &["libc.so.6"],
            &[("libc.so.6", &["GLIBC_2.2.5", "GLIBC_2.14"])],
        );
        assert_eq!(
            p.tag_for(&[l], &BTreeSet::new()).unwrap().to_string(),
            "manylinux_2_17_x86_64"
        );
    }

    #[test]
    fn foreign_library_is_not_manylinux() {
        let p = Policies::builtin();
        let l = lib(&["libgomp.so.1", "libggml.so"], &[]);
        let bundled: BTreeSet<String> = ["libggml.so".to_string()].into();
        let e = p.tag_for(&[l], &bundled).unwrap_err();
        assert_eq!(e.0.len(), 1);
        assert!(e.0[0].contains("libgomp.so.1"));
    }

    #[test]
    fn unsupplied_names_each_library_once_with_everything_that_needs_it() {
        let p = Policies::builtin();
        let libs: BTreeMap<String, ElfInfo> = [
            (
                "lib/libggml-cuda.so".to_string(),
                lib(
                    &[
                        "libnccl.so.2",
                        "libcudart.so.13",
                        "libcuda.so.1",
                        "libc.so.6",
                    ],
                    &[],
                ),
            ),
            (
                "lib/libggml.so".to_string(),
                lib(&["libggml-cuda.so", "libnccl.so.2", "libstdc++.so.6"], &[]),
            ),
            (
                "lib/libllama.so".to_string(),
                lib(&["libggml.so", "libgomp.so.1"], &[]),
            ),
        ]
        .into();
        let bundled: BTreeSet<String> = ["libggml-cuda.so", "libggml.so", "libllama.so"]
            .map(String::from)
            .into();
        let declared: BTreeSet<String> =
            ["libcudart.so.13", "libcuda.so.1"].map(String::from).into();
        let got = p.unsupplied(&libs, &bundled, &declared);
        assert_eq!(
            got,
            [
                Unsupplied {
                    library: "libgomp.so.1".into(),
                    needed_by: vec!["lib/libllama.so".into()]
                },
                Unsupplied {
                    library: "libnccl.so.2".into(),
                    needed_by: vec!["lib/libggml-cuda.so".into(), "lib/libggml.so".into()]
                },
            ]
        );
        // Declared, it is supplied.
        let declared: BTreeSet<String> = [
            "libcudart.so.13",
            "libcuda.so.1",
            "libnccl.so.2",
            "libgomp.so.1",
        ]
        .map(String::from)
        .into();
        assert!(p.unsupplied(&libs, &bundled, &declared).is_empty());
    }

    #[test]
    fn too_new_glibc_is_reported() {
        let p = Policies::builtin();
        let l = lib(&["libc.so.6"], &[("libc.so.6", &["GLIBC_2.99"])]);
        assert!(p.tag_for(&[l], &BTreeSet::new()).unwrap_err().0[0].contains("GLIBC_2.99"));
    }
}
