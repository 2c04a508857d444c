//! `recipe update`'s edit of a recipe file: a new `[[release]]` pin, written as text before
//! the newest one (releases are listed newest first), so the file's comments and layout
//! stay as they are. Pure: the caller reads and writes the file.

use super::Release;

/// What the new pin says.
pub struct NewPin<'a> {
    pub version: &'a crate::versions::Version,
    pub url: &'a str,
    pub sha256: &'a crate::digest::Sha256Hex,
    pub date: u64,
    pub strip: &'a str,
    /// The vendored llama.cpp commit, where the sdist names it.
    pub commit: Option<&'a str>,
    /// Its repository and build number, where they were asked (`[unpinned.upstream]`): the
    /// pin then gets its `[release.upstream]`.
    pub build: Option<(&'a str, u32)>,
    /// Where the hash came from, and each patch's verdict: the pin's comment.
    pub checked: &'a [String],
    pub page: &'a str,
}

/// `text` (the recipe file) with `pin` before its first `[[release]]`, taking the patch
/// entries of the release `patches_of` (as written in the file: the text between its
/// `[[release.source]]` table and the next `[[release]]` or top-level table). None where
/// the file has no such release.
pub fn add_pin(text: &str, patches_of: &Release, pin: &NewPin) -> Option<String> {
    let starts: Vec<usize> = text
        .match_indices("\n[[release]]\n")
        .map(|(i, _)| i + 1)
        .collect();
    let first = *starts.first()?;
    let entries = starts.iter().enumerate().find_map(|(n, &at)| {
        let end = starts.get(n + 1).copied().unwrap_or(text.len());
        let block = &text[at..end];
        let version_line = format!("version = \"{}\"", patches_of.version);
        if block
            .lines()
            .nth(1)
            .is_none_or(|l| l.trim() != version_line)
        {
            return None;
        }
        // Its patch entries: from the first [[release.patch]] to the end of the last one
        // (a top-level table, a comment block before one, or the next release ends it).
        let from = block.find("\n[[release.patch]]\n")? + 1;
        let rest = &block[from..];
        let until = rest
            .match_indices("\n[")
            .find(|(i, _)| !rest[i + 1..].starts_with("[[release.patch]]"))
            .map_or(rest.len(), |(i, _)| i + 1);
        let mut chunk = rest[..until].to_string();
        // Comment lines that introduce what follows belong to it, not to the patches.
        while let Some(cut) = chunk.trim_end().rfind('\n') {
            let last = &chunk.trim_end()[cut + 1..];
            if last.starts_with('#') {
                chunk.truncate(cut + 1);
            } else {
                break;
            }
        }
        Some(chunk.trim_end().to_string())
    })?;
    let mut out = String::new();
    out.push_str(&text[..first]);
    out.push_str("[[release]]\n");
    out.push_str(&format!("version = \"{}\"\n", pin.version));
    out.push_str(&format!(
        "# Pinned by `cargo xtask recipe update` from {} (its sha256 and upload time), each\n# patch checked against the sdist's tree:\n",
        pin.page
    ));
    for line in pin.checked {
        out.push_str(&format!("#   {line}\n"));
    }
    match (pin.commit, pin.build) {
        (Some(c), Some((repo, build))) => out.push_str(&format!(
            "# It vendors llama.cpp {c} (its .git/modules/vendor/llama.cpp/HEAD), build {build} as\n# GitHub's API counts its commits (`git rev-list --count {c}` in a full clone).\n[release.upstream]\nrepo = \"{repo}\"\ncommit = \"{c}\"\nbuild = {build}\n"
        )),
        (Some(c), None) => out.push_str(&format!(
            "# It vendors llama.cpp {c} (its .git/modules/vendor/llama.cpp/HEAD); the sdist holds no\n# build number: add [release.upstream] with `build` from a full clone (`git rev-list --count {c}`).\n"
        )),
        (None, _) => out.push_str("# The sdist names no llama.cpp commit.\n"),
    }
    out.push_str("[[release.source]]\nkind = \"sdist\"\n");
    out.push_str(&format!("url = \"{}\"\n", pin.url));
    out.push_str(&format!("sha256 = \"{}\"\n", pin.sha256));
    out.push_str(&format!("date = {}\n", pin.date));
    out.push_str(&format!("strip = \"{}\"\n\n", pin.strip));
    out.push_str(&entries);
    out.push_str("\n\n");
    out.push_str(&text[first..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pin_goes_first_with_the_patches_of_the_release_it_names() {
        let recipe = super::super::fixture("llama-cpp-python");
        let path = super::super::fixture_dir().join("llama-cpp-python.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let v: crate::versions::Version = "0.3.99".parse().unwrap();
        let sha: crate::digest::Sha256Hex =
            "1139dbb54509074b70893fab8554e3b079aa9f4d312058ce4018ef0019e3de12"
                .parse()
                .unwrap();
        let checked = ["no-modules-from-cwd: applies".to_string()];
        let pin = NewPin {
            version: &v,
            url: "https://files.example/llama_cpp_python-0.3.99.tar.gz",
            sha256: &sha,
            date: 1795946400,
            strip: "llama_cpp_python-0.3.99",
            commit: Some("0c1e57098bba43ac29e6e3b677cdceebdd22334f"),
            build: None,
            checked: &checked,
            page: "https://pypi.org/simple/llama-cpp-python/",
        };
        let out = add_pin(&text, &recipe.releases[0], &pin).unwrap();
        let parsed = crate::recipe::Recipe::parse(&out, &path).unwrap();
        let versions: Vec<String> = parsed
            .releases
            .iter()
            .map(|r| r.version.to_string())
            .collect();
        assert_eq!(versions, ["0.3.99", "0.3.36", "0.3.16"]);
        let new = &parsed.releases[0];
        assert_eq!(new.sources[0].sha256, sha);
        assert_eq!(new.sources[0].date, 1795946400);
        assert_eq!(
            new.patches, parsed.releases[1].patches,
            "the patches of 0.3.36"
        );
        assert!(out.contains("#   no-modules-from-cwd: applies"), "{out}");
        // The rest of the file is as it was.
        assert!(out.ends_with(&text[text.find("\n[[release]]\n").unwrap() + 1..]));
        assert!(new.upstream.is_none());

        // With the build number asked: the pin names its upstream build.
        let pin = NewPin {
            build: Some(("ggml-org/llama.cpp", 11400)),
            ..pin
        };
        let out = add_pin(&text, &recipe.releases[0], &pin).unwrap();
        let parsed = crate::recipe::Recipe::parse(&out, &path).unwrap();
        let u = parsed.releases[0].upstream.as_ref().unwrap();
        assert_eq!(
            (u.repo.as_str(), u.commit.as_str(), u.build),
            (
                "ggml-org/llama.cpp",
                "0c1e57098bba43ac29e6e3b677cdceebdd22334f",
                11400
            )
        );
    }
}
