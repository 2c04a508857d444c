//! Patches that several recipes make to one tree, written once.
//!
//! `recipes/patches/<set>.toml` holds named `[[patch]]`es, each relative to the tree
//! the set is for (llama.cpp's). A recipe names the set and where that tree is in its
//! own source:
//!
//! ```toml
//! [shared_patches]
//! file = "patches/llama.cpp.toml"   # relative to the recipe's dir
//! tree = "vendor/llama.cpp"         # "." where the source is that tree
//! ```
//!
//! and takes a patch by name where it would write one: `[[patch]]` or
//! `[[release.patch]]` with only `use = "<name>"`. Loading puts the patch in that place
//! with `tree` in front of its file, so the plan (and every hash) is what the patch
//! written out in the recipe would give.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::profile::Feature;
use super::{Patch, PatchMeta, Purpose, RecipeError, RecipeInvalid};

/// Where a recipe's shared patches come from (`[shared_patches]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedPatches {
    /// The set's file, relative to the recipe's dir (`patches/llama.cpp.toml`).
    pub file: String,
    /// Where the set's tree is inside this recipe's source: `vendor/llama.cpp`, or `.`.
    pub tree: String,
}

impl SharedPatches {
    /// What is wrong with `tree`, before any patch is put under it.
    pub(super) fn problem(&self) -> Option<String> {
        let why = (self.tree != ".")
            .then(|| crate::relative_path_problem(&self.tree))
            .flatten()?;
        Some(format!(
            "`shared_patches.tree` must be a relative path inside the source, or \".\": {why}"
        ))
    }
}

/// A `[[patch]]` entry as written: the patch itself, or a shared one taken by name.
#[derive(Debug, Clone)]
pub enum PatchEntry {
    Own(Box<Patch>),
    Use(String),
}

/// Every key a `[[patch]]` entry may have, to tell the two forms apart with messages
/// that name the key (serde's untagged enums say only that nothing matched).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(rename = "use")]
    name: Option<String>,
    /// A recipe's own patch's name, for messages and the patch check's verdicts.
    #[serde(rename = "name")]
    own_name: Option<String>,
    file: Option<String>,
    find: Option<String>,
    replace: Option<String>,
    reason: Option<String>,
    #[serde(default)]
    targets: Vec<crate::platform::Target>,
    purpose: Option<Purpose>,
    required: Option<bool>,
    probe: Option<String>,
    cost: Option<String>,
    only_where: Option<OnlyWhere>,
    #[serde(default)]
    provides: Vec<Feature>,
}

/// `only_where = { file = "...", has = "..." }`: the patch is for sources whose file has that text.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct OnlyWhere {
    file: String,
    has: String,
}

/// What a patch says of itself besides its text ([`PatchMeta`]), as written.
struct Policy {
    needs: Vec<String>,
    provides: Vec<Feature>,
    only_where: Option<OnlyWhere>,
    purpose: Option<Purpose>,
    required: Option<bool>,
    probe: Option<String>,
    cost: Option<String>,
}

impl Policy {
    fn meta(self, name: Option<String>, versions: Option<String>) -> PatchMeta {
        PatchMeta {
            name,
            purpose: self.purpose,
            required: self.required.unwrap_or(true),
            probe: self.probe,
            cost: self.cost,
            versions,
            variants: vec![],
            needs: self.needs,
            provides: self.provides,
            only_where: self.only_where.map(|o| (o.file, o.has)),
        }
    }

    fn is_set(&self) -> bool {
        self.purpose.is_some()
            || self.required.is_some()
            || self.probe.is_some()
            || self.cost.is_some()
            || !self.provides.is_empty()
    }
}

impl<'de> Deserialize<'de> for PatchEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = RawEntry::deserialize(d)?;
        let policy = Policy {
            needs: vec![],
            provides: raw.provides,
            only_where: raw.only_where,
            purpose: raw.purpose,
            required: raw.required,
            probe: raw.probe,
            cost: raw.cost,
        };
        if let Some(name) = raw.name {
            let others = [
                ("file", raw.file.is_some()),
                ("find", raw.find.is_some()),
                ("replace", raw.replace.is_some()),
                ("reason", raw.reason.is_some()),
                ("targets", !raw.targets.is_empty()),
                (
                    "purpose, required, probe, cost, provides or only_where",
                    policy.is_set(),
                ),
            ];
            return match others.iter().find(|(_, set)| *set) {
                Some((key, _)) => Err(D::Error::custom(format!(
                    "`use = \"{name}\"` takes the shared patch as it is: drop `{key}` (or write the patch out without `use`)"
                ))),
                None => Ok(PatchEntry::Use(name)),
            };
        }
        let need = |v: Option<String>, key: &str| {
            v.ok_or_else(|| {
                D::Error::custom(format!(
                    "missing field `{key}` (a patch has file, find, replace and reason, or only `use = \"<name>\"` of a shared patch)"
                ))
            })
        };
        Ok(PatchEntry::Own(Box::new(Patch {
            file: need(raw.file, "file")?,
            find: need(raw.find, "find")?,
            replace: need(raw.replace, "replace")?,
            reason: need(raw.reason, "reason")?,
            targets: raw.targets,
            meta: policy.meta(raw.own_name, None),
        })))
    }
}

/// A set file: `[[patch]]`es, each with a `name`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetFile {
    #[serde(rename = "patch")]
    patches: Vec<NamedPatch>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NamedPatch {
    name: String,
    file: String,
    find: String,
    replace: String,
    reason: String,
    #[serde(default)]
    targets: Vec<crate::platform::Target>,
    /// The same change as the patch of that name, in the text of other releases.
    variant_of: Option<String>,
    /// The releases this text is for.
    versions: Option<String>,
    /// Shared patches this one works only with.
    #[serde(default)]
    needs: Vec<String>,
    only_where: Option<OnlyWhere>,
    purpose: Option<Purpose>,
    required: Option<bool>,
    probe: Option<String>,
    cost: Option<String>,
    #[serde(default)]
    provides: Vec<Feature>,
}

/// A loaded set: its patches by name, and the file they came from (for messages).
#[derive(Debug, Default)]
pub(super) struct Set {
    path: PathBuf,
    by_name: BTreeMap<String, Patch>,
}

impl Set {
    /// Reads the set `shared` names, relative to `recipe_dir`.
    pub(super) fn load(recipe_dir: &Path, shared: &SharedPatches) -> Result<Set, RecipeError> {
        let path = recipe_dir.join(&shared.file);
        let text = fs_err::read_to_string(&path).map_err(|source| RecipeError::Read {
            path: path.clone(),
            source,
        })?;
        Set::parse(&text, &path)
    }

    pub(super) fn parse(text: &str, path: &Path) -> Result<Set, RecipeError> {
        let malformed = |message: String| RecipeError::Malformed {
            path: path.to_path_buf(),
            message,
        };
        let file: SetFile =
            toml::from_str(text).map_err(|e| malformed(e.to_string().trim_end().to_string()))?;
        let mut by_name = BTreeMap::new();
        let mut variants = Vec::new();
        for NamedPatch {
            name,
            file,
            find,
            replace,
            reason,
            targets,
            variant_of,
            versions,
            needs,
            only_where,
            purpose,
            required,
            probe,
            cost,
            provides,
        } in file.patches
        {
            let policy = Policy {
                needs,
                provides,
                only_where,
                purpose,
                required,
                probe,
                cost,
            };
            let patch = Patch {
                file,
                find,
                replace,
                reason,
                targets,
                meta: policy.meta(Some(name.clone()), versions),
            };
            if let Some(problem) = patch.problem() {
                return Err(malformed(format!(
                    "patch `{name}` of {}: {problem}",
                    patch.file
                )));
            }
            if by_name.insert(name.clone(), patch).is_some() {
                return Err(malformed(format!(
                    "two patches are named `{name}`: each name is taken once"
                )));
            }
            if let Some(of) = variant_of {
                variants.push((name, of));
            }
        }
        for (name, p) in &by_name {
            if let Some(n) = p.meta.needs.iter().find(|n| !by_name.contains_key(*n)) {
                return Err(malformed(format!(
                    "patch `{name}` needs `{n}`, which the set does not have"
                )));
            }
        }
        for (name, of) in &variants {
            let variant = by_name[name].clone();
            match by_name.get_mut(of) {
                Some(main) if main.meta.purpose == variant.meta.purpose
                    && (variant.meta.provides.is_empty() || variant.meta.provides == main.meta.provides)
                    && !variants.iter().any(|(n, _)| n == of) =>
                {
                    main.meta.variants.push(variant)
                }
                Some(_) => {
                    return Err(malformed(format!(
                        "patch `{name}` is a `variant_of` `{of}`, which is a variant itself or has another purpose or `provides`: a variant is the same change in another release's text (it takes the `provides` of the patch it is a variant of)"
                    )))
                }
                None => {
                    return Err(malformed(format!(
                        "patch `{name}` is a `variant_of` `{of}`, which the set does not have"
                    )))
                }
            }
        }
        Ok(Set {
            path: path.to_path_buf(),
            by_name,
        })
    }

    /// The entries as patches of the recipe's source: its own as they are, each shared one
    /// with `tree` in front of its file.
    pub(super) fn resolve(
        &self,
        entries: &[PatchEntry],
        tree: Option<&str>,
    ) -> Result<Vec<Patch>, RecipeInvalid> {
        entries
            .iter()
            .map(|e| match e {
                PatchEntry::Own(p) => Ok((**p).clone()),
                PatchEntry::Use(name) => {
                    let Some(tree) = tree else {
                        return Err(RecipeInvalid::NoSharedPatches { name: name.clone() });
                    };
                    let mut p = self.by_name.get(name).cloned().ok_or_else(|| {
                        RecipeInvalid::UnknownSharedPatch {
                            name: name.clone(),
                            set: self.path.display().to_string(),
                            known: self.by_name.keys().cloned().collect::<Vec<_>>().join(", "),
                        }
                    })?;
                    if tree != "." {
                        // `tree` has no empty component (SharedPatches::problem).
                        p.file = format!("{tree}/{}", p.file);
                        for v in &mut p.meta.variants {
                            v.file = format!("{tree}/{}", v.file);
                        }
                        if let Some((file, _)) = &mut p.meta.only_where {
                            *file = format!("{tree}/{file}");
                        }
                    }
                    Ok(p)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SET: &str = r#"
[[patch]]
name = "quiet"
file = "src/a.c"
find = "puts(x);"
replace = ""
reason = "no output"
"#;

    fn set() -> Set {
        Set::parse(SET, Path::new("patches/t.toml")).unwrap()
    }

    fn entries(toml_text: &str) -> Result<Vec<PatchEntry>, String> {
        #[derive(Deserialize)]
        struct T {
            patch: Vec<PatchEntry>,
        }
        toml::from_str::<T>(toml_text)
            .map(|t| t.patch)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_shared_patch_lands_under_the_tree_in_place() {
        let e = entries(
            "[[patch]]\nfile = \"x.py\"\nfind = \"a\"\nreplace = \"b\"\nreason = \"r\"\n[[patch]]\nuse = \"quiet\"\n",
        )
        .unwrap();
        let got = set().resolve(&e, Some("vendor/llama.cpp")).unwrap();
        assert_eq!(
            got.iter().map(|p| p.file.as_str()).collect::<Vec<_>>(),
            ["x.py", "vendor/llama.cpp/src/a.c"]
        );
        assert_eq!(
            (got[1].find.as_str(), got[1].reason.as_str()),
            ("puts(x);", "no output")
        );
        let root = set().resolve(&e, Some(".")).unwrap();
        assert_eq!(root[1].file, "src/a.c");
    }

    #[test]
    fn unknown_names_and_mixed_entries_are_refused_with_what_to_do() {
        let e = entries("[[patch]]\nuse = \"loud\"\n").unwrap();
        let err = set().resolve(&e, Some(".")).unwrap_err().to_string();
        assert!(
            err.contains("\"loud\"") && err.contains("patches/t.toml") && err.contains("quiet"),
            "{err}"
        );
        let err = set()
            .resolve(&entries("[[patch]]\nuse = \"quiet\"\n").unwrap(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("[shared_patches]"), "{err}");
        let err = entries("[[patch]]\nuse = \"quiet\"\nfile = \"b.c\"\n").unwrap_err();
        assert!(err.contains("drop `file`") && err.contains("line"), "{err}");
        let err = entries("[[patch]]\nfile = \"b.c\"\nfind = \"a\"\nreason = \"r\"\n").unwrap_err();
        assert!(err.contains("missing field `replace`"), "{err}");
        let err = entries("[[patch]]\nfiel = \"b.c\"\n").unwrap_err();
        assert!(err.contains("fiel"), "{err}");
    }

    #[test]
    fn a_tree_outside_the_source_or_with_an_empty_component_is_refused() {
        let shared = |tree: &str| SharedPatches {
            file: "patches/t.toml".into(),
            tree: tree.into(),
        };
        for ok in [".", "vendor/llama.cpp"] {
            assert_eq!(shared(ok).problem(), None, "{ok}");
        }
        for bad in [
            "../llama.cpp",
            "/src",
            "vendor/",
            "vendor//llama.cpp",
            "./vendor",
            "",
        ] {
            let e = shared(bad)
                .problem()
                .unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(
                e.starts_with("`shared_patches.tree` must be a relative path"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_set_with_a_bad_or_twice_named_patch_is_refused() {
        let twice = format!("{SET}{SET}");
        let e = Set::parse(&twice, Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("two patches are named `quiet`"), "{e}");
        let escaping = SET.replace("src/a.c", "../a.c");
        let e = Set::parse(&escaping, Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("patch `quiet` of ../a.c") && e.contains("relative path"),
            "{e}"
        );
    }
}
