//! Patches that say when they apply, and the check of them against a source tree.
//!
//! Each patch declares its purpose, whether a build needs it, the other texts of the same
//! change (`variant_of`: the text of other releases, each with the `versions` it is for) and a
//! `probe`: a text whose presence in the file says the fix is already upstream. Before
//! anything is built, the plan checks every patch against the tree ([`check`]), in order and
//! on the text the patches before it left: each one applies (its own text, or a variant's:
//! the first that fits once, or a later one that fits and holds all of that text),
//! is already upstream, or does not fit. A required patch that does not fit refuses the
//! build; an optional one is skipped, and the plan records it with what skipping it costs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Patch;

/// Why a patch is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    /// Closes a hole (code loaded from the current dir).
    Security,
    /// Without it, the artifact is wrong (a miscompile, a second runtime).
    Correctness,
    /// Without it, a target does not build (mingw-w64's headers, GCC 12's intrinsics).
    Platform,
    /// Makes the artifact smaller or the build ship less.
    Size,
    /// Makes the build faster; the bytes are the same without it.
    Speed,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Security => "security",
            Purpose::Correctness => "correctness",
            Purpose::Platform => "platform",
            Purpose::Size => "size",
            Purpose::Speed => "speed",
        }
    }
}

/// What the recipe says of a patch besides its text: it decides the check, and is not part
/// of the plan (the plan records the text applied, and each patch skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchMeta {
    /// The shared patch's name (`no-modules-from-cwd`); none for a recipe's own.
    pub name: Option<String>,
    pub purpose: Option<Purpose>,
    /// A build that needs it is refused where it does not fit; an optional one is skipped.
    pub required: bool,
    /// A text whose presence in the file says the change is already upstream.
    pub probe: Option<String>,
    /// What a build without it loses ("build about 15% longer"), for optional patches.
    pub cost: Option<String>,
    /// The releases this text is for, as written in the set ("llama-cpp-python 0.3.17 to 0.3.35").
    pub versions: Option<String>,
    /// The same change for other releases (`variant_of` this patch), tried in order when
    /// this text does not fit.
    pub variants: Vec<Patch>,
    /// Shared patches this one works only with (the `#pragma once` of the headers a
    /// grouped compile includes twice): where one of them is left out, so is this one.
    pub needs: Vec<String>,
    /// The patch is for sources whose file (the first, by its path in the source) has this
    /// text (the second): elsewhere it is left out as not for this source. For a change
    /// that fits a tree's text but is right only where another file is as it expects.
    pub only_where: Option<(String, String)>,
    /// The features it provides (`provides = ["cpu-variants"]`): the defines it reads,
    /// which the plan sets only where a patch of the release provides them.
    pub provides: Vec<super::profile::Feature>,
}

impl Default for PatchMeta {
    fn default() -> PatchMeta {
        PatchMeta {
            name: None,
            purpose: None,
            required: true,
            probe: None,
            cost: None,
            versions: None,
            variants: vec![],
            provides: vec![],
            needs: vec![],
            only_where: None,
        }
    }
}

impl Patch {
    /// How messages name it: the shared name, or the file and the first line of its text.
    pub fn label(&self) -> String {
        match &self.meta.name {
            Some(n) => n.clone(),
            None => format!(
                "{} ({})",
                self.file,
                self.find
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
            ),
        }
    }
}

/// A patch the plan leaves out, and why: in the plan (so in the manifest and its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkippedPatch {
    /// The shared patch's name, or its file and first line.
    pub name: String,
    pub file: String,
    /// `already upstream` or `does not fit this source`, with what was looked for.
    pub why: String,
    /// What the build loses without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
}

/// One patch's verdict, as the preview lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchFit {
    /// Its own text fits.
    Applies,
    /// A variant's text fits: the releases it is for.
    AppliesAs(String),
    /// The probe is in the file: the fix is upstream.
    Upstream,
    /// An optional patch whose text is not there.
    Skipped,
    /// Its `only_where` text is not in the source.
    NotForThisSource,
}

impl std::fmt::Display for PatchFit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatchFit::Applies => f.write_str("applies"),
            PatchFit::AppliesAs(v) => write!(f, "applies (the text for {v})"),
            PatchFit::Upstream => f.write_str("already upstream"),
            PatchFit::Skipped => f.write_str("does not fit: skipped"),
            PatchFit::NotForThisSource => f.write_str("not for this source: skipped"),
        }
    }
}

/// What the check found: the patches to apply, in order, those left out, and each patch's
/// verdict.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckedPatches {
    pub applied: Vec<Patch>,
    pub skipped: Vec<SkippedPatch>,
    pub verdicts: Vec<(String, PatchFit)>,
}

/// A required patch whose text the source does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the patch `{name}` ({purpose}, required) does not fit this source: {file} {found}; it looks for:\n{text}\nThe build is refused, as it would lack that change. If upstream made the change another way, the recipe's patch needs a `probe` (a text that shows the fix is there) or a variant for this release (`variant_of`): see docs/recipes.md")]
pub struct PatchDoesNotFit {
    pub name: String,
    pub purpose: String,
    pub file: String,
    pub found: String,
    pub text: String,
}

/// Checks `patches` in order against `files` (each patched file's text, by its path in the
/// source; a file the source lacks is absent). Each patch's text must occur exactly once in
/// what the patches before it left.
pub fn check(
    patches: &[Patch],
    files: &BTreeMap<String, String>,
) -> Result<CheckedPatches, PatchDoesNotFit> {
    // A patch that needs one left out is left out too, wherever the two stand in the list:
    // checked again, with it left out, until nothing changes.
    let mut left_out: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let out = check_leaving_out(patches, files, &left_out)?;
        let more: Vec<(String, String)> = out
            .applied
            .iter()
            .filter_map(|p| {
                let n = p
                    .meta
                    .needs
                    .iter()
                    .find(|n| out.skipped.iter().any(|s| &s.name == *n))?;
                Some((p.label(), n.clone()))
            })
            .collect();
        if more.is_empty() {
            return Ok(out);
        }
        left_out.extend(more);
    }
}

fn check_leaving_out(
    patches: &[Patch],
    files: &BTreeMap<String, String>,
    left_out: &BTreeMap<String, String>,
) -> Result<CheckedPatches, PatchDoesNotFit> {
    let mut tree = files.clone();
    let mut out = CheckedPatches::default();
    for p in patches {
        let needed = p
            .meta
            .needs
            .iter()
            .find(|n| out.skipped.iter().any(|s| &s.name == *n))
            .or_else(|| left_out.get(&p.label()));
        if let Some((file, text)) = &p.meta.only_where {
            if !tree.get(file).is_some_and(|t| t.contains(text.as_str())) {
                out.skipped.push(SkippedPatch {
                    name: p.label(),
                    file: p.file.clone(),
                    why: format!(
                        "not for this source: it is for sources whose {file} has `{}`",
                        text.lines()
                            .find(|l| !l.trim().is_empty())
                            .unwrap_or("")
                            .trim()
                    ),
                    cost: p.meta.cost.clone(),
                });
                out.verdicts.push((p.label(), PatchFit::NotForThisSource));
                continue;
            }
        }
        if let Some(n) = needed {
            out.skipped.push(SkippedPatch {
                name: p.label(),
                file: p.file.clone(),
                why: format!("needs `{n}`, which is left out"),
                cost: p.meta.cost.clone(),
            });
            out.verdicts.push((p.label(), PatchFit::Skipped));
            continue;
        }
        let count = |c: &Patch, tree: &BTreeMap<String, String>| {
            tree.get(&c.file).map(|t| t.matches(&c.find).count())
        };
        // The first text that fits once, or a later one that fits and holds all of it: a
        // variant whose text holds the patch's and more is the same change for a tree
        // that has more around it (the longest of those).
        let texts: Vec<&Patch> = std::iter::once(p).chain(&p.meta.variants).collect();
        let fitting: Vec<usize> = (0..texts.len())
            .filter(|&i| count(texts[i], &tree) == Some(1))
            .collect();
        let fits = fitting.first().map(|&first| {
            fitting
                .iter()
                .copied()
                .filter(|&i| texts[i].find.contains(texts[first].find.as_str()))
                .max_by_key(|&i| (texts[i].find.len(), std::cmp::Reverse(i)))
                .unwrap_or(first)
        });
        if let Some(i) = fits {
            let chosen = if i == 0 { p } else { &p.meta.variants[i - 1] };
            let text = tree.get_mut(&chosen.file).expect("counted above");
            *text = text.replacen(&chosen.find, &chosen.replace, 1);
            let mut applied = chosen.clone();
            applied.meta = PatchMeta {
                variants: vec![],
                ..p.meta.clone()
            };
            out.applied.push(applied);
            let verdict = match (i, &chosen.meta.versions) {
                (0, _) => PatchFit::Applies,
                (_, Some(v)) => PatchFit::AppliesAs(v.clone()),
                (_, None) => PatchFit::AppliesAs(format!("variant {i}")),
            };
            out.verdicts.push((p.label(), verdict));
            continue;
        }
        let upstream = p.meta.probe.as_ref().is_some_and(|probe| {
            tree.get(&p.file)
                .is_some_and(|t| t.contains(probe.as_str()))
        });
        let found = match count(p, &tree) {
            None => "is not in the source".to_string(),
            Some(0) => "does not have the text".to_string(),
            Some(n) => format!("has the text {n} times, not once"),
        };
        if upstream {
            out.skipped.push(SkippedPatch {
                name: p.label(),
                file: p.file.clone(),
                why: "already upstream: the source has the change (the recipe's probe text is in the file)".into(),
                cost: None,
            });
            out.verdicts.push((p.label(), PatchFit::Upstream));
        } else if p.meta.required {
            return Err(PatchDoesNotFit {
                name: p.label(),
                purpose: p
                    .meta
                    .purpose
                    .map_or("no purpose given", Purpose::as_str)
                    .into(),
                file: p.file.clone(),
                found,
                text: p.find.lines().take(6).collect::<Vec<_>>().join("\n"),
            });
        } else {
            out.skipped.push(SkippedPatch {
                name: p.label(),
                file: p.file.clone(),
                why: format!("does not fit this source: {} {found}", p.file),
                cost: p.meta.cost.clone(),
            });
            out.verdicts.push((p.label(), PatchFit::Skipped));
        }
    }
    Ok(out)
}

/// Every file the patches (and their variants) change: what a source must be read for.
pub fn files_of(patches: &[Patch]) -> std::collections::BTreeSet<String> {
    patches
        .iter()
        .flat_map(|p| std::iter::once(p).chain(&p.meta.variants))
        .flat_map(|p| {
            std::iter::once(p.file.clone()).chain(p.meta.only_where.iter().map(|(f, _)| f.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(file: &str, find: &str, replace: &str) -> Patch {
        Patch {
            file: file.into(),
            find: find.into(),
            replace: replace.into(),
            reason: "r".into(),
            targets: vec![],
            meta: PatchMeta {
                name: Some(format!("p-{find}")),
                ..PatchMeta::default()
            },
        }
    }

    fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn patches_apply_in_order_on_what_the_ones_before_left() {
        let first = patch("a.c", "x();", "x(); y();");
        let second = patch("a.c", "y();", "z();");
        let got = check(
            &[first.clone(), second.clone()],
            &tree(&[("a.c", "x();\n")]),
        )
        .unwrap();
        assert_eq!(got.applied, [first, second]);
        assert_eq!(
            got.verdicts,
            [
                ("p-x();".into(), PatchFit::Applies),
                ("p-y();".into(), PatchFit::Applies)
            ]
        );
        assert!(got.skipped.is_empty());
    }

    #[test]
    fn a_variant_applies_where_the_text_differs() {
        let mut p = patch("a.c", "new();", "safe_new();");
        let mut old = patch("a.c", "old();", "safe_old();");
        old.meta.versions = Some("0.3.17 to 0.3.35".into());
        p.meta.variants = vec![old.clone()];
        let got = check(&[p], &tree(&[("a.c", "old();\n")])).unwrap();
        assert_eq!(got.applied, [old]);
        assert_eq!(got.applied[0].meta.name.as_deref(), Some("p-new();"));
        assert_eq!(
            got.verdicts[0].1.to_string(),
            "applies (the text for 0.3.17 to 0.3.35)"
        );
    }

    /// Where the patch's text and a variant's that holds it both fit, the variant is applied
    /// (the tree has more of it); where only the patch's fits, the patch; a variant that
    /// fits too but does not hold the patch's text is not preferred for its length.
    #[test]
    fn the_longest_text_that_fits_is_applied() {
        let mut p = patch("a.c", "call();", "grouped();");
        let mut longer = patch("a.c", "named();\ncall();", "full();\ngrouped();");
        longer.meta.versions = Some("trees that list by name".into());
        p.meta.variants = vec![longer.clone()];
        let got = check(&[p.clone()], &tree(&[("a.c", "named();\ncall();\n")])).unwrap();
        assert_eq!(got.applied, [longer]);
        assert_eq!(
            got.verdicts[0].1.to_string(),
            "applies (the text for trees that list by name)"
        );
        let got = check(&[p.clone()], &tree(&[("a.c", "other();\ncall();\n")])).unwrap();
        let mut own = p.clone();
        own.meta.variants = vec![];
        assert_eq!(got.applied, [own.clone()]);
        assert_eq!(got.verdicts[0].1, PatchFit::Applies);
        let mut q = p;
        q.meta.variants = vec![patch("a.c", "a_much_longer_other_text();", "x")];
        let got = check(
            &[q],
            &tree(&[("a.c", "a_much_longer_other_text();\ncall();\n")]),
        )
        .unwrap();
        assert_eq!(got.applied, [own]);
    }

    #[test]
    fn a_required_patch_that_does_not_fit_refuses_naming_file_and_text() {
        let mut p = patch("src/a.c", "gone();", "x");
        p.meta.purpose = Some(Purpose::Security);
        let e = check(&[p.clone()], &tree(&[("src/a.c", "here();")])).unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("`p-gone();` (security, required)")
                && m.contains("src/a.c does not have the text")
                && m.contains("gone();"),
            "{m}"
        );
        let e = check(&[p.clone()], &tree(&[])).unwrap_err();
        assert!(
            e.to_string().contains("src/a.c is not in the source"),
            "{e}"
        );
        let e = check(&[p], &tree(&[("src/a.c", "gone(); gone();")])).unwrap_err();
        assert!(
            e.to_string().contains("has the text 2 times, not once"),
            "{e}"
        );
    }

    #[test]
    fn an_optional_patch_is_skipped_with_its_cost_and_a_probe_says_upstream() {
        let mut speed = patch("a.c", "slow();", "fast();");
        speed.meta.required = false;
        speed.meta.cost = Some("build about 15% longer".into());
        let mut fixed = patch("b.c", "bad();", "good();");
        fixed.meta.probe = Some("good();".into());
        let got = check(
            &[speed, fixed],
            &tree(&[("a.c", "other();"), ("b.c", "good();")]),
        )
        .unwrap();
        assert!(got.applied.is_empty());
        assert_eq!(got.skipped.len(), 2);
        assert_eq!(
            got.skipped[0].cost.as_deref(),
            Some("build about 15% longer")
        );
        assert!(got.skipped[0]
            .why
            .starts_with("does not fit this source: a.c does not have the text"));
        assert!(got.skipped[1].why.starts_with("already upstream"));
        assert_eq!(
            got.verdicts
                .iter()
                .map(|(_, v)| v.clone())
                .collect::<Vec<_>>(),
            [PatchFit::Skipped, PatchFit::Upstream]
        );
    }

    #[test]
    fn a_patch_only_where_another_file_says_so() {
        let mut p = patch("CMakeLists.txt", "COMMON ON", "COMMON OFF");
        p.meta.only_where = Some(("tools/CMakeLists.txt".into(), "if (TOOLS)".into()));
        let old = tree(&[
            ("CMakeLists.txt", "COMMON ON"),
            ("tools/CMakeLists.txt", "add(cli)"),
        ]);
        let got = check(&[p.clone()], &old).unwrap();
        assert!(got.applied.is_empty());
        assert_eq!(got.verdicts[0].1, PatchFit::NotForThisSource);
        assert!(
            got.skipped[0]
                .why
                .contains("tools/CMakeLists.txt has `if (TOOLS)`"),
            "{:?}",
            got.skipped
        );
        let new = tree(&[
            ("CMakeLists.txt", "COMMON ON"),
            ("tools/CMakeLists.txt", "if (TOOLS)\nadd(cli)"),
        ]);
        assert_eq!(check(&[p.clone()], &new).unwrap().applied, [p.clone()]);
        assert!(files_of(&[p]).contains("tools/CMakeLists.txt"));
    }

    #[test]
    fn a_patch_that_needs_one_left_out_is_left_out_too() {
        let mut once = patch("a.h", "struct s;", "#pragma once\nstruct s;");
        once.meta.required = false;
        let mut groups = patch("CMakeLists.txt", "add(x)", "add(grouped)");
        groups.meta.required = false;
        groups.meta.needs = vec!["p-struct s;".into()];
        let files = tree(&[("a.h", "other"), ("CMakeLists.txt", "add(x)")]);
        let got = check(&[once.clone(), groups.clone()], &files).unwrap();
        assert!(got.applied.is_empty());
        assert_eq!(got.skipped[1].why, "needs `p-struct s;`, which is left out");
        // The same where the one needed comes later in the list.
        let got = check(&[groups.clone(), once.clone()], &files).unwrap();
        assert!(got.applied.is_empty(), "{:?}", got.applied);
        assert_eq!(got.skipped[0].why, "needs `p-struct s;`, which is left out");
        let files = tree(&[("a.h", "struct s;"), ("CMakeLists.txt", "add(x)")]);
        assert_eq!(check(&[once, groups], &files).unwrap().applied.len(), 2);
    }
}
