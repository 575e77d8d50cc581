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
        let key = PrivateKey::from_openssh(text.trim()).map_err(|e| e.to_string())?;
        if key.is_encrypted() {
            return Ok(IdentityKey::Encrypted(Some(key.public_key().clone())));
        }
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
}
