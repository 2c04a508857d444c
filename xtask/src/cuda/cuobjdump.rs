//! The device code gate: what a library holds (read by [`super::fatbin`]) vs. the targets
//! asked for. cuobjdump's listings are parsed too ([`parse_list`], [`parse_dump`]), for the
//! tests that check the reader against cuobjdump.

use std::collections::BTreeSet;
use std::fmt;

use regex::Regex;

use super::arch::{ArchList, ArchVariant, CudaArch};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CodeKind {
    /// A cubin (`-real`).
    Sass,
    /// PTX (`-virtual`).
    Ptx,
}

/// One kind of device code for one arch found in a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EmbeddedCode {
    pub kind: CodeKind,
    pub arch: CudaArch,
}

impl fmt::Display for EmbeddedCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            CodeKind::Sass => write!(f, "SASS {}", self.arch.sm_name()),
            CodeKind::Ptx => write!(f, "PTX compute_{}", self.arch),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read cuobjdump output line {line_no}: `{line}`; expected `ELF file    1: NAME.sm_120a.cubin` or `PTX file    1: NAME.sm_120.ptx` (did the cuobjdump output format change?)")]
pub struct CuobjdumpParseError {
    pub line_no: usize,
    pub line: String,
}

fn arch_of(sm: &str) -> Option<CudaArch> {
    sm.parse().ok()
}

/// Parses `cuobjdump --list-elf` and `--list-ptx` output (either or both, concatenated).
/// Note: `--list-elf` names `sm_120f` cubins `sm_120`; use [`parse_dump`] to see `f`.
pub fn parse_list(text: &str) -> Result<BTreeSet<EmbeddedCode>, CuobjdumpParseError> {
    let re = Regex::new(r"^(ELF|PTX) file\s+\d+:\s+\S*\.(sm_\d+[af]?)\.(cubin|ptx)$")
        .expect("static regex");
    let mut found = BTreeSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with("cuobjdump info") {
            continue;
        }
        let bad = || CuobjdumpParseError {
            line_no: i + 1,
            line: line.to_string(),
        };
        let c = re.captures(line).ok_or_else(bad)?;
        let kind = match (&c[1], &c[3]) {
            ("ELF", "cubin") => CodeKind::Sass,
            ("PTX", "ptx") => CodeKind::Ptx,
            _ => return Err(bad()),
        };
        found.insert(EmbeddedCode {
            kind,
            arch: arch_of(&c[2]).ok_or_else(bad)?,
        });
    }
    Ok(found)
}

/// Parses the entry headers of `cuobjdump -ptx` / `-elf` dumps (`Fatbin elf code:` ... `arch = sm_120f`),
/// which, unlike `--list-elf`, keep the `f` of family cubins.
pub fn parse_dump(text: &str) -> Result<BTreeSet<EmbeddedCode>, CuobjdumpParseError> {
    let arch_re = Regex::new(r"^arch = (sm_\d+[af]?)$").expect("static regex");
    let mut found = BTreeSet::new();
    let mut pending: Option<(CodeKind, usize)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        match line {
            "Fatbin elf code:" => pending = Some((CodeKind::Sass, i + 1)),
            "Fatbin ptx code:" => pending = Some((CodeKind::Ptx, i + 1)),
            _ => {
                if let (Some((kind, _)), Some(c)) = (pending, arch_re.captures(line)) {
                    let bad = || CuobjdumpParseError {
                        line_no: i + 1,
                        line: line.to_string(),
                    };
                    found.insert(EmbeddedCode {
                        kind,
                        arch: arch_of(&c[1]).ok_or_else(bad)?,
                    });
                    pending = None;
                }
            }
        }
    }
    match pending {
        Some((_, line_no)) => Err(CuobjdumpParseError {
            line_no,
            line: "Fatbin entry without an `arch = sm_...` line".into(),
        }),
        None => Ok(found),
    }
}

/// A difference between what was asked and what the library holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateProblem {
    Missing {
        code: EmbeddedCode,
        hint: Option<String>,
    },
    Unexpected {
        code: EmbeddedCode,
        hint: Option<String>,
    },
}

impl fmt::Display for GateProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, code, hint) = match self {
            GateProblem::Missing { code, hint } => ("missing", code, hint),
            GateProblem::Unexpected { code, hint } => ("not asked for", code, hint),
        };
        write!(f, "{code}: {what}")?;
        match hint {
            Some(h) => write!(f, " ({h})"),
            None => Ok(()),
        }
    }
}

fn expected_codes(expected: &ArchList) -> BTreeSet<EmbeddedCode> {
    let sass = expected.sass().map(|arch| EmbeddedCode {
        kind: CodeKind::Sass,
        arch,
    });
    let ptx = expected.ptx().map(|arch| EmbeddedCode {
        kind: CodeKind::Ptx,
        arch,
    });
    sass.chain(ptx).collect()
}

fn unexpected_hint(code: &EmbeddedCode, want: &BTreeSet<EmbeddedCode>) -> Option<String> {
    let a = code.arch;
    let wants = |kind: CodeKind, arch: CudaArch| want.contains(&EmbeddedCode { kind, arch });
    let wants_12x = want.iter().any(|w| w.arch.major() == 12);
    Some(match code.kind {
        CodeKind::Sass if a.major() == 10 && a.minor() == 0 && wants_12x => {
            "sm_100 is B200/GB200 code and does not run on RTX 50 (sm_120); was 100 passed instead of 120?".into()
        }
        CodeKind::Sass if wants(CodeKind::Sass, a.with_variant(ArchVariant::ArchSpecific)) => format!(
            "plain {} where {}a was asked: the injected arch list did not reach CMake or was rewritten",
            a.sm_name(),
            a.sm_name()
        ),
        CodeKind::Sass if wants(CodeKind::Sass, a.with_variant(ArchVariant::Family)) => format!(
            "plain {} where {}f was asked: the f did not reach nvcc",
            a.sm_name(),
            a.sm_name()
        ),
        CodeKind::Sass if a.variant() == ArchVariant::Plain && [52, 75].contains(&a.number()) => format!(
            "{} is nvcc's default arch: some compile or device-link step ran without the arch flags",
            a.sm_name()
        ),
        CodeKind::Ptx if want.iter().any(|w| w.arch == a) => {
            format!("PTX beside the {} cubin: the arch was given without -real, so CMake added PTX", a.sm_name())
        }
        CodeKind::Ptx => "--ptx was not given; PTX makes the library much larger".into(),
        _ => return None,
    })
}

/// Passes when the library holds exactly the asked SASS and PTX, nothing missing and nothing extra.
pub fn gate(expected: &ArchList, found: &BTreeSet<EmbeddedCode>) -> Result<(), Vec<GateProblem>> {
    let want = expected_codes(expected);
    let mut problems: Vec<GateProblem> = want
        .difference(found)
        .map(|code| GateProblem::Missing {
            code: *code,
            hint: Some(format!("asked for by {expected}")),
        })
        .collect();
    problems.extend(found.difference(&want).map(|code| GateProblem::Unexpected {
        code: *code,
        hint: unexpected_hint(code, &want),
    }));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
#[path = "cuobjdump_tests.rs"]
mod tests;
