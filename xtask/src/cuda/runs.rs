//! Which GPUs device code runs on: natively (a cubin the GPU executes), only through
//! the driver's PTX JIT (slow first load), or not at all ("no kernel image is
//! available for execution on the device"). Pure: the codes found, the GPU's compute
//! capability in.
//!
//! The rules, as NVIDIA documents them: a plain cubin `sm_XY` runs on X.Y and later
//! minors of major X; an `a` cubin (`sm_120a`) on X.Y only; an `f` cubin (`sm_100f`) on
//! X.Y and later minors of its family (the same major). PTX `compute_XY` is JIT-compiled
//! for any GPU of X.Y or newer; `compute_XYa` for X.Y only, `compute_XYf` for its family.

use std::collections::BTreeSet;

use super::arch::{ArchVariant, CudaArch};
use super::cuobjdump::{CodeKind, EmbeddedCode};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Runs {
    Natively,
    PtxJit,
    No,
}

fn covers(code: CudaArch, gpu: CudaArch, any_newer_major: bool) -> bool {
    match code.variant() {
        ArchVariant::ArchSpecific => (code.major(), code.minor()) == (gpu.major(), gpu.minor()),
        ArchVariant::Family => code.major() == gpu.major() && gpu.minor() >= code.minor(),
        ArchVariant::Plain if any_newer_major => {
            (gpu.major(), gpu.minor()) >= (code.major(), code.minor())
        }
        ArchVariant::Plain => code.major() == gpu.major() && gpu.minor() >= code.minor(),
    }
}

/// How one library's device code runs on a GPU of compute capability `gpu`.
pub fn runs_on(codes: &BTreeSet<EmbeddedCode>, gpu: CudaArch) -> Runs {
    let sass = codes
        .iter()
        .any(|c| c.kind == CodeKind::Sass && covers(c.arch, gpu, false));
    let ptx = codes
        .iter()
        .any(|c| c.kind == CodeKind::Ptx && covers(c.arch, gpu, true));
    if sass {
        Runs::Natively
    } else if ptx {
        Runs::PtxJit
    } else {
        Runs::No
    }
}

/// How an artifact runs on `gpu`: as its worst library with device code does.
pub fn artifact_runs_on<'a>(
    libraries: impl IntoIterator<Item = &'a BTreeSet<EmbeddedCode>>,
    gpu: CudaArch,
) -> Runs {
    libraries
        .into_iter()
        .map(|codes| runs_on(codes, gpu))
        .max()
        .unwrap_or(Runs::No)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(list: &[(CodeKind, &str)]) -> BTreeSet<EmbeddedCode> {
        list.iter()
            .map(|(kind, a)| EmbeddedCode {
                kind: *kind,
                arch: a.parse().unwrap(),
            })
            .collect()
    }

    #[test]
    fn cubins_and_ptx_by_variant() {
        use CodeKind::{Ptx, Sass};
        let cc = |s: &str| -> CudaArch { s.parse().unwrap() };
        let ours = codes(&[(Sass, "120a")]);
        assert_eq!(runs_on(&ours, cc("120")), Runs::Natively);
        assert_eq!(runs_on(&ours, cc("121")), Runs::No, "a: exactly 12.0");
        assert_eq!(runs_on(&ours, cc("90")), Runs::No);
        let fam = codes(&[(Sass, "100f")]);
        assert_eq!(runs_on(&fam, cc("103")), Runs::Natively, "f: the family");
        assert_eq!(runs_on(&fam, cc("120")), Runs::No, "f: not another major");
        let plain = codes(&[(Sass, "86")]);
        assert_eq!(runs_on(&plain, cc("89")), Runs::Natively);
        assert_eq!(runs_on(&plain, cc("80")), Runs::No);
        assert_eq!(
            runs_on(&plain, cc("90")),
            Runs::No,
            "SASS never crosses a major"
        );
        let ptx = codes(&[(Sass, "90"), (Ptx, "90")]);
        assert_eq!(
            runs_on(&ptx, cc("120")),
            Runs::PtxJit,
            "plain PTX: any newer GPU"
        );
        assert_eq!(runs_on(&ptx, cc("90")), Runs::Natively);
        assert_eq!(runs_on(&ptx, cc("89")), Runs::No);
        let ptx_a = codes(&[(Ptx, "120a")]);
        assert_eq!(runs_on(&ptx_a, cc("121")), Runs::No);
        // The artifact: its worst library.
        let libs = [ours.clone(), ptx.clone()];
        assert_eq!(artifact_runs_on(&libs, cc("120")), Runs::PtxJit);
        assert_eq!(artifact_runs_on(&libs, cc("90")), Runs::No);
        assert_eq!(artifact_runs_on(&[], cc("90")), Runs::No);
    }
}
