//! The signed listing of one plan's entry in a substituter (`<plan>/artifacts`): which
//! plan, when it was built, and each artifact and its manifest by sha256 and size. Pure:
//! rendered by `publish`, parsed by `fetch` only after its signature held.
//!
//! ```text
//! llama-forge substituter entry 1
//! plan 3f0c...e1 (64 hex)
//! built 2026-12-04T05:00:00Z
//! artifact <sha256> <size> llama_cpp_python-0.3.36+cu130.sm120a-py3-none-manylinux_2_28_x86_64.whl
//! manifest <sha256> <size> llama_cpp_python-0.3.36+cu130.sm120a-py3-none-manylinux_2_28_x86_64.whl.manifest.json
//! ```

use crate::digest::Sha256Hex;

/// The listing's first line: what it is, and its format's version.
pub const HEAD: &str = "llama-forge substituter entry 1";
/// The most a listing may hold (bytes): read with this cap.
pub const MAX_BYTES: u64 = 64 * 1024;
/// The most artifacts one plan makes (one wheel per Python, a few Pythons).
const MAX_ARTIFACTS: usize = 32;
/// The largest artifact a substituter may serve: a wheel with the CUDA runtime bundled
/// is about 1 GB; the read stops at the size the listing signs, and this caps that.
pub const MAX_ARTIFACT_BYTES: u64 = 4 << 30;

/// One file of the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub sha256: Sha256Hex,
    pub size: u64,
    pub name: String,
}

/// An artifact and the manifest beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub artifact: File,
    pub manifest: File,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub plan: Sha256Hex,
    /// When it was built (RFC 3339, UTC), as its publisher signed it.
    pub built: String,
    pub pairs: Vec<Pair>,
}

impl Listing {
    pub fn render(&self) -> String {
        let mut s = format!("{HEAD}\nplan {}\nbuilt {}\n", self.plan, self.built);
        for p in &self.pairs {
            for (what, f) in [("artifact", &p.artifact), ("manifest", &p.manifest)] {
                s.push_str(&format!("{what} {} {} {}\n", f.sha256, f.size, f.name));
            }
        }
        s
    }

    /// Reads a listing (after its signature held): every line as [`Listing::render`]
    /// writes it, each artifact followed by its manifest, plain file names.
    pub fn parse(text: &str) -> Result<Listing, String> {
        let mut lines = text.lines();
        if lines.next() != Some(HEAD) {
            return Err(format!("it does not start with `{HEAD}`"));
        }
        let field = |line: Option<&str>, key: &str| -> Result<String, String> {
            line.and_then(|l| l.strip_prefix(key))
                .and_then(|l| l.strip_prefix(' '))
                .map(str::to_string)
                .ok_or_else(|| {
                    format!(
                        "its second and third lines must be `plan ...` and `built ...`, not `{}`",
                        crate::escape::value(line.unwrap_or(""))
                    )
                })
        };
        let plan: Sha256Hex = field(lines.next(), "plan")?
            .parse()
            .map_err(|e| format!("its plan: {e}"))?;
        let built = field(lines.next(), "built")?;
        if crate::recipe::parse_utc(&built).is_none() {
            return Err(format!(
                "`built {built}` is not a UTC time (2026-12-04T05:00:00Z)"
            ));
        }
        let mut files = Vec::new();
        for (i, line) in lines.enumerate() {
            let f = file(line).map_err(|e| format!("line {}: {e}", i + 4))?;
            files.push(f);
        }
        if files.len() % 2 != 0 || files.is_empty() || files.len() > 2 * MAX_ARTIFACTS {
            return Err(format!(
                "it lists {} files: 1 to {MAX_ARTIFACTS} artifacts, each followed by its manifest",
                files.len()
            ));
        }
        let mut pairs = Vec::new();
        for two in files.chunks(2) {
            let [(wa, a), (wm, m)] = [two[0].clone(), two[1].clone()];
            if wa != "artifact" || wm != "manifest" || m.name != format!("{}.manifest.json", a.name)
            {
                return Err(format!(
                    "`{wa} {}` is not followed by its manifest (`manifest ... {}.manifest.json`)",
                    a.name, a.name
                ));
            }
            if a.size > MAX_ARTIFACT_BYTES || m.size > crate::manifest::MAX_BYTES {
                return Err(format!(
                    "{} is listed at {} bytes, over what a substituter may serve ({} for an artifact, {} for a manifest)",
                    a.name, a.size.max(m.size), MAX_ARTIFACT_BYTES, crate::manifest::MAX_BYTES
                ));
            }
            pairs.push(Pair {
                artifact: a,
                manifest: m,
            });
        }
        let mut names: Vec<&str> = pairs.iter().map(|p| p.artifact.name.as_str()).collect();
        names.sort_unstable();
        if names
            .windows(2)
            .any(|w| crate::portable::folded(w[0]) == crate::portable::folded(w[1]))
        {
            return Err("it lists one artifact name twice".into());
        }
        Ok(Listing { plan, built, pairs })
    }
}

/// `artifact <sha256> <size> <name>`: the kind, and the file.
fn file(line: &str) -> Result<(String, File), String> {
    let mut parts = line.splitn(4, ' ');
    let (Some(what), Some(sha), Some(size), Some(name)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!(
            "`{line}` is not `artifact|manifest <sha256> <size> <name>`"
        ));
    };
    if what != "artifact" && what != "manifest" {
        return Err(format!("`{what}` is neither `artifact` nor `manifest`"));
    }
    let sha256: Sha256Hex = sha.parse()?;
    let size: u64 = size
        .parse()
        .map_err(|_| format!("`{size}` is not a size in bytes"))?;
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && crate::portable::name_problem(name).is_none()
        && [".whl", ".tar.gz", ".zip", ".manifest.json"]
            .iter()
            .any(|e| name.ends_with(e));
    if !plain {
        return Err(format!(
            "`{name}` is not the plain name of a wheel, archive or manifest"
        ));
    }
    Ok((
        what.to_string(),
        File {
            sha256,
            size,
            name: name.to_string(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(c: char) -> Sha256Hex {
        c.to_string().repeat(64).parse().unwrap()
    }

    fn listing() -> Listing {
        Listing {
            plan: sha('a'),
            built: "2026-12-04T05:00:00Z".into(),
            pairs: vec![Pair {
                artifact: File {
                    sha256: sha('b'),
                    size: 29_000,
                    name: "w-0.3.36+cpu-py3-none-linux_x86_64.whl".into(),
                },
                manifest: File {
                    sha256: sha('c'),
                    size: 9_000,
                    name: "w-0.3.36+cpu-py3-none-linux_x86_64.whl.manifest.json".into(),
                },
            }],
        }
    }

    #[test]
    fn a_listing_reads_back() {
        let l = listing();
        assert_eq!(Listing::parse(&l.render()).unwrap(), l);
    }

    #[test]
    fn a_listing_that_is_not_plain_is_refused() {
        let good = listing().render();
        for (from, to, says) in [
            (
                "llama-forge substituter entry 1",
                "entry 2",
                "does not start",
            ),
            ("plan aaaa", "plan zzzz", "its plan"),
            ("2026-12-04T05:00:00Z", "yesterday", "not a UTC time"),
            (
                "none-linux_x86_64.whl\n",
                "none-linux_x86_64.whl\nartifact x\n",
                "line 5",
            ),
            (
                "29000",
                "99999999999999",
                "over what a substituter may serve",
            ),
            (
                "w-0.3.36+cpu-py3-none-linux_x86_64.whl\n",
                "../w.whl\n",
                "not the plain name",
            ),
            (
                "w-0.3.36+cpu-py3-none-linux_x86_64.whl.manifest",
                "x.whl.manifest",
                "not followed by its manifest",
            ),
        ] {
            assert!(good.contains(from), "{from}");
            let bad = good.replacen(from, to, 1);
            let e = Listing::parse(&bad).unwrap_err();
            assert!(e.contains(says), "{from} -> {to}: {e}");
        }
        let mut twice = listing();
        twice.pairs.push(twice.pairs[0].clone());
        let e = Listing::parse(&twice.render()).unwrap_err();
        assert!(e.contains("twice"), "{e}");
    }
}
