//! Reading SSH key files, below both the SSH transport (`remote::ssh`
//! logs in with them) and bundle signing (`results::signature` signs with
//! them), so that neither borrows the other's parser: a private key
//! (OpenSSH, PEM or PKCS#8), told apart as usable here or encrypted (then
//! only ssh-agent can sign with it), and OpenSSH's `-cert.pub` certificate
//! beside it.  Never asks for a passphrase.  Imports neither of them.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use russh::keys::{Certificate, PrivateKey, PublicKey};

/// A private key file as read without a passphrase.
#[derive(Debug)]
pub enum IdentityKey {
    Plain(Arc<PrivateKey>),
    /// Only ssh-agent can sign with it.  Its public key, if the file (an
    /// encrypted OpenSSH key) or a `.pub` beside it (legacy PEM) tells it.
    Encrypted(Option<PublicKey>),
}

/// Read a private key file (`pub_text`: its `.pub`, if any); never asks
/// for a passphrase.  OpenSSH keys (RSA, ECDSA, Ed25519), PEM RSA
/// (`BEGIN RSA PRIVATE KEY`), PEM/SEC1 ECDSA and PKCS#8 are read by russh.
pub fn classify_identity(text: &str, pub_text: Option<&str>) -> Result<IdentityKey, String> {
    let from_pub = || {
        pub_text.and_then(|t| {
            let line = t.lines().find(|l| !l.trim().is_empty())?;
            PublicKey::from_openssh(line.trim()).ok()
        })
    };
    if text.contains("-----BEGIN OPENSSH PRIVATE KEY-----") {
        // The public half of an encrypted OpenSSH key is stored in clear.
        let key = match PrivateKey::from_openssh(text.trim()) {
            Ok(key) => key,
            Err(e) => match padded_p256_scalar(text) {
                Some(bytes) => PrivateKey::from_bytes(&bytes).map_err(|e| e.to_string())?,
                None => return Err(e.to_string()),
            },
        };
        if key.is_encrypted() {
            return Ok(IdentityKey::Encrypted(Some(key.public_key().clone())));
        }
        return Ok(IdentityKey::Plain(Arc::new(key)));
    } else if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        || text
            .lines()
            .any(|l| l.trim_end().starts_with("Proc-Type:") && l.trim_end().ends_with(",ENCRYPTED"))
    {
        // Legacy PEM (`Proc-Type: 4,ENCRYPTED`) or encrypted PKCS#8: the
        // public key is not readable without the passphrase.
        return Ok(IdentityKey::Encrypted(from_pub()));
    }
    russh::keys::decode_secret_key(text, None)
        .map(|k| IdentityKey::Plain(Arc::new(k)))
        .map_err(|e| e.to_string())
}

/// An unencrypted OpenSSH ECDSA P-256 key whose private scalar OpenSSH
/// wrote in fewer than 32 bytes (an mpint has no leading zero bytes: one key
/// in 256 that `ssh-keygen -t ecdsa` makes), re-encoded with the scalar
/// padded to 32 bytes, which ssh-key 0.7.0-rc.11 requires (it refuses the
/// short one, "length invalid"; RustCrypto/SSH#350).  `None` for any other
/// key, which then keeps its own error.  The layout is OpenSSH's PROTOCOL.key.
fn padded_p256_scalar(text: &str) -> Option<Vec<u8>> {
    use base64ct::{Base64, Encoding};
    const MAGIC: &[u8] = b"openssh-key-v1\0";
    let body: String = text
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN OPENSSH PRIVATE KEY-----")
        .skip(1)
        .take_while(|l| *l != "-----END OPENSSH PRIVATE KEY-----")
        .collect();
    let blob = Base64::decode_vec(&body).ok()?;
    let mut r = blob.strip_prefix(MAGIC)?;
    let cipher = take_string(&mut r)?;
    let kdf = take_string(&mut r)?;
    let kdf_options = take_string(&mut r)?;
    let count = take_u32(&mut r)?;
    let public = take_string(&mut r)?;
    let mut private = take_string(&mut r)?;
    if cipher != b"none" || count != 1 || !r.is_empty() {
        return None;
    }
    let check = private.get(..8)?;
    private = &private[8..];
    let key_type = take_string(&mut private)?;
    let curve = take_string(&mut private)?;
    let point = take_string(&mut private)?;
    let scalar = take_string(&mut private)?;
    let comment = take_string(&mut private)?;
    if key_type != b"ecdsa-sha2-nistp256" || scalar.is_empty() || scalar.len() >= 32 {
        return None;
    }
    let mut padded = vec![0u8; 32 - scalar.len()];
    padded.extend_from_slice(scalar);
    let mut inner = check.to_vec();
    for field in [key_type, curve, point, &padded[..], comment] {
        put_string(&mut inner, field);
    }
    // Padding 1, 2, 3, … to the cipher's block size (8 for "none").
    let mut n = 1u8;
    while inner.len() % 8 != 0 {
        inner.push(n);
        n += 1;
    }
    let mut out = MAGIC.to_vec();
    for field in [cipher, kdf, kdf_options] {
        put_string(&mut out, field);
    }
    out.extend_from_slice(&count.to_be_bytes());
    put_string(&mut out, public);
    put_string(&mut out, &inner);
    Some(out)
}

fn take_u32(r: &mut &[u8]) -> Option<u32> {
    let (head, rest) = r.split_first_chunk::<4>()?;
    *r = rest;
    Some(u32::from_be_bytes(*head))
}

fn take_string<'a>(r: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = usize::try_from(take_u32(r)?).ok()?;
    if r.len() < n {
        return None;
    }
    let (s, rest) = r.split_at(n);
    *r = rest;
    Some(s)
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&u32::try_from(s.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(s);
}

/// [`classify_identity`] of the file at `path` and the `.pub` beside it,
/// if any; the message names the file.
pub fn read_identity(path: &Path) -> Result<IdentityKey, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("read the identity file {}: {e}", path.display()))?;
    let pub_text = std::fs::read_to_string(suffixed(path, ".pub")).ok();
    classify_identity(&text, pub_text.as_deref()).map_err(|e| {
        format!(
            "read the identity file {}: {e} (expected an OpenSSH, PEM or PKCS#8 private key)",
            path.display()
        )
    })
}

/// `path` with `suffix` appended to its file name (`key` → `key-cert.pub`).
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// OpenSSH's certificate beside an identity file: `<identity_file>-cert.pub`.
pub fn read_certificate(identity: &Path) -> Result<Option<(PathBuf, Certificate)>, String> {
    let path = suffixed(identity, "-cert.pub");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("read the certificate {}: {e}", path.display())),
    };
    let cert = Certificate::from_openssh(text.trim())
        .map_err(|e| format!("read the certificate {}: {e}", path.display()))?;
    Ok(Some((path, cert)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encrypted_pem_keys_are_recognised_without_a_passphrase() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\
                   DEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF\n\nAAAA\n\
                   -----END RSA PRIVATE KEY-----\n";
        assert!(matches!(
            classify_identity(pem, None),
            Ok(IdentityKey::Encrypted(None))
        ));
        let public =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHXbP1jZCAqaS5nF0y4b0hS2nXXnuxGmlCCCPHF3Z3FW c\n";
        match classify_identity(pem, Some(public)) {
            Ok(IdentityKey::Encrypted(Some(k))) => {
                assert_eq!(k.algorithm().as_str(), "ssh-ed25519")
            }
            other => panic!("{other:?}"),
        }
        let pkcs8 =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        assert!(matches!(
            classify_identity(pkcs8, None),
            Ok(IdentityKey::Encrypted(None))
        ));
        assert!(classify_identity("not a key", None).is_err());
    }

    /// One ECDSA key in 256 has a private scalar of 31 bytes; this one,
    /// made by `ssh-keygen -t ecdsa`, was found by trying.  It loads, and
    /// it signs what its public key verifies.
    #[test]
    fn an_ecdsa_key_with_a_short_scalar_is_read() {
        let text = include_str!("../../tests/fixtures/keys/ecdsa-short-scalar");
        assert!(
            PrivateKey::from_openssh(text.trim()).is_err(),
            "ssh-key got fixed"
        );
        let Ok(IdentityKey::Plain(key)) = classify_identity(text, None) else {
            panic!("not read")
        };
        let public = include_str!("../../tests/fixtures/keys/ecdsa-short-scalar.pub");
        assert_eq!(
            key.public_key().to_openssh().expect("openssh"),
            public.trim()
        );
        let sig = key
            .sign("fsmatrix", russh::keys::HashAlg::Sha512, b"message")
            .expect("sign");
        key.public_key()
            .verify("fsmatrix", b"message", &sig)
            .expect("verify");
        // Any other key that does not load keeps its own error.
        assert!(padded_p256_scalar(text.replace("AAAA", "AAAB").as_str()).is_none());
    }
}
