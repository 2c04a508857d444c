//! minisign signatures over a listing: made by `publish` with the publisher's secret key,
//! checked by `fetch` with the one public key the user named beside the substituter.

use std::io::Cursor;

use anyhow::{anyhow, Result};

/// The most a signature file may hold (minisign's are about 300 bytes).
pub const MAX_SIG_BYTES: u64 = 4096;

/// A publisher's key: the secret one, and its public half (for the id and a check).
#[derive(Clone)]
pub struct Signer {
    secret: minisign::SecretKey,
    pub public: minisign::PublicKey,
}

impl std::fmt::Debug for Signer {
    /// The key's id only: the secret stays out of every message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer(key {})", self.id())
    }
}

impl Signer {
    /// The id of its key, as minisign prints it.
    pub fn id(&self) -> String {
        crate::request::substituter::key_id(&self.public)
    }

    /// The secret key from its file's text (`cache keygen`'s `.key`, or minisign's
    /// `.key`); `password` where it is encrypted (minisign's default).
    pub fn from_text(text: &str, password: Option<&str>, what: &str) -> Result<Signer> {
        let boxed = minisign::SecretKeyBox::from_string(text)
            .map_err(|e| anyhow!("{what} is not a minisign secret key: {e}"))?;
        let secret = match password {
            Some(p) => minisign::SecretKey::from_box(boxed, Some(p.to_string())),
            None => minisign::SecretKey::from_unencrypted_box(boxed),
        }
        .map_err(|e| {
            let hint = if password.is_some() {
                "is LLAMA_FORGE_SIGNING_KEY_PASSWORD its password?"
            } else {
                "if it is encrypted, give its password in LLAMA_FORGE_SIGNING_KEY_PASSWORD"
            };
            anyhow!("{what}: {e} ({hint})")
        })?;
        if secret.is_encrypted() {
            return Err(anyhow!(
                "{what} is encrypted: give its password in LLAMA_FORGE_SIGNING_KEY_PASSWORD"
            ));
        }
        let public = minisign::PublicKey::from_secret_key(&secret)
            .map_err(|e| anyhow!("{what}: no public key from it: {e}"))?;
        Ok(Signer { secret, public })
    }

    /// A new key pair, unencrypted: its secret key's text and its public key's file text.
    pub fn generate() -> Result<(String, String)> {
        let kp = minisign::KeyPair::generate_unencrypted_keypair()
            .map_err(|e| anyhow!("cannot make a key pair: {e}"))?;
        let id = crate::request::substituter::key_id(&kp.pk);
        let secret = kp
            .sk
            .to_box(Some(&format!("llama-forge substituter secret key {id}")))
            .map_err(|e| anyhow!("{e}"))?
            .into_string();
        let public = format!(
            "untrusted comment: llama-forge substituter public key {id}\n{}\n",
            kp.pk.to_base64()
        );
        Ok((secret, public))
    }

    /// minisign's signature file for `data`, its trusted comment `comment`.
    pub fn sign(&self, data: &[u8], comment: &str) -> Result<String> {
        let sig = minisign::sign(
            Some(&self.public),
            &self.secret,
            Cursor::new(data),
            Some(comment),
            Some("signature from a llama-forge substituter key"),
        )
        .map_err(|e| anyhow!("cannot sign: {e}"))?;
        Ok(sig.into_string())
    }
}

/// Whether `sig` (a signature file's text) is `key`'s signature of `data`; the error
/// says why not.
pub fn check(key: &minisign::PublicKey, data: &[u8], sig: &str) -> Result<(), String> {
    let sig = minisign::SignatureBox::from_string(sig)
        .map_err(|e| format!("its signature cannot be read ({e})"))?;
    let id = crate::request::substituter::key_id(key);
    minisign::verify(key, &sig, Cursor::new(data), true, false, false).map_err(|e| {
        format!("its signature is not one of key {id}, the key named for this substituter ({e})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_holds_for_its_key_and_its_bytes_only() {
        let (secret, public) = Signer::generate().unwrap();
        let signer = Signer::from_text(&secret, None, "the key").unwrap();
        let key = crate::request::substituter::parse_key(&public).unwrap();
        assert_eq!(key, signer.public);
        let sig = signer.sign(b"listing", "plan x").unwrap();
        check(&key, b"listing", &sig).unwrap();
        let e = check(&key, b"listinG", &sig).unwrap_err();
        assert!(e.contains("not one of key"), "{e}");
        let (other, _) = Signer::generate().unwrap();
        let other = Signer::from_text(&other, None, "k").unwrap();
        let e = check(&other.public, b"listing", &sig).unwrap_err();
        assert!(e.contains("not one of key"), "{e}");
        let e = check(&key, b"listing", "garbage").unwrap_err();
        assert!(e.contains("cannot be read"), "{e}");
        let e = Signer::from_text("nonsense", None, "LLAMA_FORGE_SIGNING_KEY")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("LLAMA_FORGE_SIGNING_KEY"), "{e}");
    }
}
