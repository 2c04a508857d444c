//! Applies the plan's source patches to the freshly unpacked tree.

use std::path::Path;

use anyhow::{bail, Result};

use crate::recipe::Patch;

/// Applies each patch in order: its `find` text must occur exactly once in its file.
/// Runs on the tree this build just unpacked (owned by this user, checked), before the
/// record of it is made, so a reused tree is the patched one.
pub fn apply(src: &Path, patches: &[Patch]) -> Result<()> {
    for p in patches {
        let path = src.join(&p.file);
        if fs_err::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            bail!(
                "source patch: {} is not a regular file; the patch ({}) cannot be applied",
                path.display(),
                p.reason
            );
        }
        let text = fs_err::read_to_string(&path).map_err(|e| {
            anyhow::anyhow!(
                "source patch: {e}; the recipe patches {} ({}): is the source the release the recipe names?",
                p.file,
                p.reason
            )
        })?;
        let found = text.matches(&p.find).count();
        if found != 1 {
            bail!(
                "source patch: the text to replace occurs {found} times in {}, not once; the recipe's patch ({}) does not fit this source: is it the release the recipe names? Text:\n{}",
                path.display(),
                p.reason,
                p.find
            );
        }
        fs_err::write(&path, text.replacen(&p.find, &p.replace, 1))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(find: &str, replace: &str) -> Patch {
        Patch {
            file: "a/b.py".into(),
            find: find.into(),
            replace: replace.into(),
            reason: "test".into(),
            targets: vec![],
            meta: Default::default(),
        }
    }

    #[test]
    fn replaces_the_one_occurrence() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("a/b.py"), "x = 1\ny = 2\n").unwrap();
        apply(d.path(), &[patch("y = 2\n", "y = 2\nz = 3\n")]).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("a/b.py")).unwrap(),
            "x = 1\ny = 2\nz = 3\n"
        );
    }

    #[test]
    fn refuses_missing_repeated_text_and_missing_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("a/b.py"), "x\nx\n").unwrap();
        let e = apply(d.path(), &[patch("x\n", "y\n")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("occurs 2 times") && e.contains("b.py"), "{e}");
        let e = apply(d.path(), &[patch("nope", "y")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("occurs 0 times"), "{e}");
        std::fs::remove_file(d.path().join("a/b.py")).unwrap();
        let e = apply(d.path(), &[patch("x", "y")]).unwrap_err().to_string();
        assert!(
            e.contains("a/b.py") && e.contains("release the recipe names"),
            "{e}"
        );
        // Unchanged on failure: nothing is written unless the text fits.
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_in_place_of_the_file_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("t"), "x\n").unwrap();
        std::fs::create_dir(d.path().join("a")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("t"), d.path().join("a/b.py")).unwrap();
        let e = apply(d.path(), &[patch("x\n", "y\n")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("t")).unwrap(),
            "x\n"
        );
    }
}
