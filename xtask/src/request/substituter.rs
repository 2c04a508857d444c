//! `--cache-from <url|dir>=<key>`: a substituter, a place that may already hold this
//! plan's artifacts, and the one public key whose signature makes them trusted there.
//!
//! The key is minisign's (`cache keygen`, or `minisign -G`): its base64 line (`RW...`,
//! 56 characters) or the path of its `.pub` file. The value is split at its last `=`
//! (a minisign key has none), so a URL with a query keeps its own.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Where a substituter is: served over HTTP(S), or a directory of this machine (a
/// mounted share, a synced bucket, another checkout's `--cache-to`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Http(String),
    Dir(PathBuf),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // A password in the URL is never shown.
            Location::Http(u) => match url::Url::parse(u) {
                Ok(mut parsed) if parsed.password().is_some() => {
                    let _ = parsed.set_password(Some("***"));
                    f.write_str(parsed.as_str().trim_end_matches('/'))
                }
                _ => f.write_str(u.trim_end_matches('/')),
            },
            Location::Dir(d) => write!(f, "{}", d.display()),
        }
    }
}

/// One `--cache-from`: the place, and the key its entries must be signed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Substituter {
    pub location: Location,
    pub key: minisign::PublicKey,
}

impl Substituter {
    /// The key's id as minisign prints it (`4D5F1E2A0B3C6D7E`): who signed what it serves.
    pub fn key_id(&self) -> String {
        key_id(&self.key)
    }
}

/// A minisign public key's id, as minisign prints it.
pub fn key_id(key: &minisign::PublicKey) -> String {
    let b = key.to_bytes();
    let mut n = [0u8; 8];
    n.copy_from_slice(&b[2..10]);
    format!("{:016X}", u64::from_le_bytes(n))
}

/// A minisign public key from its base64 line or its `.pub` file's text.
pub fn parse_key(text: &str) -> Result<minisign::PublicKey, String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
        .unwrap_or("");
    minisign::PublicKey::from_base64(line).map_err(|e| e.to_string())
}

impl FromStr for Substituter {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage = "give `<url or dir>=<public key>`, the key as minisign's base64 line (RW...) or its .pub file: `--cache-from https://example.org/forge=RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3`";
        let Some((place, key)) = s.rsplit_once('=') else {
            return Err(format!(
                "`{s}` names no key: a substituter is trusted only with the public key its artifacts are signed with; {usage}"
            ));
        };
        let (place, key) = (place.trim(), key.trim());
        if place.is_empty() {
            return Err(format!("`{s}` names no place: {usage}"));
        }
        // A key that reads as minisign's base64 line is that key, never a file of that
        // name (its `/` makes it a path too, which another user could plant); anything
        // else is a `.pub` file, read as untrusted input: a regular file of at most 4 KiB.
        let key = match parse_key(key) {
            Ok(k) => k,
            Err(_)
                if key.starts_with("RW")
                    && !key.ends_with(".pub")
                    && !std::path::Path::new(key).is_absolute()
                    && !key.starts_with('.') =>
            {
                return Err(format!("`{key}` is not a minisign public key: {usage}"));
            }
            Err(_) => {
                let data = crate::bounded::read_capped(
                    std::path::Path::new(key),
                    4096,
                    "a minisign public key",
                )
                .map_err(|e| format!("the key of `{s}`: {e:#}: {usage}"))?;
                let text =
                    String::from_utf8(data).map_err(|_| format!("{key} is not text: {usage}"))?;
                parse_key(&text)
                    .map_err(|e| format!("{key} holds no minisign public key ({e}): {usage}"))?
            }
        };
        let location = match place.split_once("://") {
            Some(("http" | "https", _)) => Location::Http(place.to_string()),
            Some((scheme, _)) => {
                return Err(format!(
                    "`{place}`: a substituter is an http(s) URL or a directory, not {scheme}:// (serve it over HTTPS, or give the directory it is mounted at)"
                ))
            }
            None => Location::Dir(PathBuf::from(place)),
        };
        Ok(Substituter { location, key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> (minisign::KeyPair, String) {
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let b64 = kp.pk.to_base64();
        (kp, b64)
    }

    #[test]
    fn a_place_and_its_key() {
        let (kp, b64) = key();
        let s: Substituter = format!("https://example.org/forge/?a=b={b64}")
            .parse()
            .unwrap();
        assert_eq!(
            s.location,
            Location::Http("https://example.org/forge/?a=b".into())
        );
        assert_eq!(s.key, kp.pk);
        assert_eq!(s.key_id().len(), 16);
        let d = tempfile::tempdir().unwrap();
        let pubfile = d.path().join("team.pub");
        std::fs::write(
            &pubfile,
            format!("untrusted comment: minisign public key\n{b64}\n"),
        )
        .unwrap();
        let s: Substituter = format!("/srv/forge={}", pubfile.display()).parse().unwrap();
        assert_eq!(s.location, Location::Dir("/srv/forge".into()));
        assert_eq!(s.key, kp.pk);
        // A file named as the key (another user's, in a shared current dir) is not read
        // for it: the key is the text given.
        let (other, other_b64) = key();
        let planted = std::path::Path::new(&other_b64);
        if let Some(dir) = planted.parent().filter(|p| !p.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(planted, format!("untrusted comment: x\n{b64}\n"));
        let s: Result<Substituter, _> = format!("/srv/forge={other_b64}").parse();
        let _ = std::fs::remove_file(planted);
        if let Some(std::path::Component::Normal(first)) = planted.components().next() {
            if planted.components().count() > 1 {
                let _ = std::fs::remove_dir_all(first);
            }
        }
        assert_eq!(s.unwrap().key, other.pk);
        // A password in the URL is not shown.
        let s: Substituter = format!("https://alice:S3cret@example.org/forge={b64}")
            .parse()
            .unwrap();
        assert_eq!(
            s.location.to_string(),
            "https://alice:***@example.org/forge"
        );
    }

    #[test]
    fn no_key_no_trust() {
        let (_, b64) = key();
        for (bad, says) in [
            ("https://example.org/forge", "names no key"),
            (
                "https://example.org/forge=RWnotakey",
                "not a minisign public key",
            ),
            ("=RWQ", "names no place"),
            ("/srv/forge=/dev/null", "not a regular file"),
            ("/srv/forge=/nonexistent/team.pub", "/nonexistent/team.pub"),
        ] {
            let e = bad.parse::<Substituter>().unwrap_err();
            assert!(e.contains(says) && e.contains("--cache-from"), "{bad}: {e}");
        }
        let e = format!("s3://bucket/forge={b64}")
            .parse::<Substituter>()
            .unwrap_err();
        assert!(e.contains("not s3://"), "{e}");
    }
}
