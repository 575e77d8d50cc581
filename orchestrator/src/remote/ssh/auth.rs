//! Logging in to one SSH server on the way ([`authenticate`]): an identity
//! file and its certificate, or the keys ssh-agent holds; file and agent
//! signers; the RSA hash the server accepts; refusal messages that say
//! what to fix.  Key files are read by [`crate::keys`].
use std::path::{Path, PathBuf};
use std::sync::Arc;

use russh::client::Handle;
use russh::keys::agent::AgentIdentity;
use russh::keys::ssh_key::private::KeypairData;
use russh::keys::{Certificate, HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKey};

use super::connect::{Client, Leg};
use crate::keys::{read_certificate, read_identity, IdentityKey};
use crate::remote::RemoteError;

/// ssh-agent's socket from `SSH_AUTH_SOCK` (unset or empty: none).
pub fn agent_from_env() -> Option<PathBuf> {
    std::env::var_os("SSH_AUTH_SOCK")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
}

/// Log in as the leg's user, the way `ssh -o IdentitiesOnly=yes` would:
///
/// - An `identity_file` is the only key offered (an ssh config's several
///   IdentityFiles: each in order, until one is accepted).  Unencrypted, it signs
///   here; encrypted (a passphrase), ssh-agent signs with it if it holds
///   that very key, else the log-in fails with how to fix it: fsmatrix
///   never asks for a passphrase.
/// - OpenSSH's `<identity_file>-cert.pub`, if present, is offered first
///   (a user certificate), then the plain key.
/// - Without an `identity_file`, every key and certificate ssh-agent holds
///   is offered in its order.
/// - RSA signs with the rsa-sha2 hash the server announces
///   ([`rsa_hashes`]); SHA-1 `ssh-rsa` only if the server announces nothing
///   better.
pub(super) async fn authenticate(
    handle: &mut Handle<Client>,
    leg: &Leg<'_>,
) -> Result<(), RemoteError> {
    let auth_error = |reason: String| RemoteError::Auth {
        host: leg.id.name.clone(),
        user: leg.user.to_string(),
        reason,
    };
    let announced = handle
        .best_supported_rsa_hash()
        .await
        .map_err(|e| auth_error(e.to_string()))?;
    let mut login = Login {
        handle,
        user: leg.user,
        rsa: rsa_hashes(announced),
    };
    if leg.identity_files.is_empty() {
        return login.with_agent(leg.agent_sock).await.map_err(auth_error);
    }
    // Each file in order, as ssh offers its IdentityFiles; the reasons of
    // all when none is accepted.
    let mut why = Vec::new();
    for path in leg.identity_files {
        match login.with_identity_file(path, leg.agent_sock).await {
            Ok(()) => return Ok(()),
            Err(e) => why.push(e),
        }
    }
    Err(auth_error(why.join("; then ")))
}

/// The RSA signature hashes to try, from `best_supported_rsa_hash`: the
/// best the server announces in `server-sig-algs` first, then sha256 if
/// that was sha512 (OpenSSH 9.2's sshd announces every algorithm it knows,
/// not only those its PubkeyAcceptedAlgorithms allow); SHA-1 `ssh-rsa`
/// only if the server announces nothing better.  Without the extension:
/// sha512 then sha256, never SHA-1 (every OpenSSH since 7.2 has rsa-sha2).
fn rsa_hashes(announced: Option<Option<HashAlg>>) -> Vec<Option<HashAlg>> {
    match announced {
        Some(Some(HashAlg::Sha512)) | None => vec![Some(HashAlg::Sha512), Some(HashAlg::Sha256)],
        Some(best) => vec![best],
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn utc(secs: u64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    i64::try_from(secs)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| format!("{secs} (Unix time)"))
}

/// A certificate in a refusal message: its principals and validity, and
/// which of them rules out logging in as `user` at `now` (Unix seconds).
fn describe_certificate(cert: &Certificate, user: &str, now: u64) -> String {
    let principals = if cert.valid_principals().is_empty() {
        "none".to_string()
    } else {
        cert.valid_principals().join(", ")
    };
    let after = cert.valid_after();
    let before = cert.valid_before();
    let validity = match (after, before) {
        (0, u64::MAX) => "valid forever".to_string(),
        (0, b) => format!("valid until {}", utc(b)),
        (a, u64::MAX) => format!("valid from {} on", utc(a)),
        (a, b) => format!("valid from {} to {}", utc(a), utc(b)),
    };
    let mut problems = Vec::new();
    if now >= before {
        problems.push("it has expired".to_string());
    } else if now < after {
        problems.push("it is not valid yet".to_string());
    }
    if !cert.valid_principals().iter().any(|p| p == user) {
        problems.push(format!("it does not name the user {user}"));
    }
    let mut text = format!(
        "key ID {:?}, principals: {principals}, {validity}",
        cert.key_id()
    );
    if !problems.is_empty() {
        text.push_str(&format!(": {}", problems.join(" and ")));
    }
    text
}

fn describe_key(key: &PublicKey) -> String {
    format!(
        "{} {}",
        key.algorithm().as_str(),
        key.fingerprint(HashAlg::Sha256)
    )
}

/// The hashes a key signs with: [`rsa_hashes`] for RSA, else one.
fn hashes_for(algorithm: russh::keys::Algorithm, rsa: &[Option<HashAlg>]) -> Vec<Option<HashAlg>> {
    if algorithm.is_rsa() {
        rsa.to_vec()
    } else {
        vec![None]
    }
}

#[derive(Debug, thiserror::Error)]
enum SignError {
    #[error(transparent)]
    Send(#[from] russh::SendError),
    #[error("{0}")]
    Sign(String),
}

/// Signs certificate log-ins with a private key read from a file (russh's
/// own `authenticate_openssh_cert` cannot pick the rsa-sha2 hash).
struct FileSigner(Arc<PrivateKey>);

impl russh::Signer for FileSigner {
    type Error = SignError;

    fn auth_sign(
        &mut self,
        _identity: &AgentIdentity,
        hash_alg: Option<HashAlg>,
        mut to_sign: Vec<u8>,
    ) -> impl std::future::Future<Output = Result<Vec<u8>, Self::Error>> + Send {
        let key = self.0.clone();
        async move {
            use russh::keys::signature::Signer as _;
            use russh::keys::ssh_encoding::Encode as _;
            let signature = match key.key_data() {
                KeypairData::Rsa(rsa) => (rsa, hash_alg).try_sign(&to_sign),
                other => other.try_sign(&to_sign),
            }
            .map_err(|e| SignError::Sign(e.to_string()))?;
            let mut blob = Vec::new();
            signature
                .encode(&mut blob)
                .map_err(|e| SignError::Sign(e.to_string()))?;
            blob.encode(&mut to_sign)
                .map_err(|e| SignError::Sign(e.to_string()))?;
            Ok(to_sign)
        }
    }
}

type Agent = russh::keys::agent::client::AgentClient<tokio::net::UnixStream>;

/// Signs with ssh-agent.  A certificate is signed for by its plain key
/// first (what `ssh-add` loads next to it, and how OpenSSH pairs a
/// `-cert.pub` file with an agent key), then as the certificate itself.
struct AgentSigner<'a>(&'a mut Agent);

impl russh::Signer for AgentSigner<'_> {
    type Error = SignError;

    async fn auth_sign(
        &mut self,
        identity: &AgentIdentity,
        hash_alg: Option<HashAlg>,
        to_sign: Vec<u8>,
    ) -> Result<Vec<u8>, Self::Error> {
        if let AgentIdentity::Certificate { certificate, .. } = identity {
            let plain = AgentIdentity::PublicKey {
                key: PublicKey::from(certificate.public_key().clone()),
                comment: String::new(),
            };
            if let Ok(signed) = self.0.sign_request(&plain, hash_alg, to_sign.clone()).await {
                return Ok(signed);
            }
        }
        self.0
            .sign_request(identity, hash_alg, to_sign)
            .await
            .map_err(|e| SignError::Sign(format!("ssh-agent could not sign: {e}")))
    }
}

async fn connect_agent(sock: &Path) -> Result<Agent, String> {
    Agent::connect_uds(sock)
        .await
        .map_err(|e| format!("reach ssh-agent at {}: {e}", sock.display()))
}

async fn agent_identities(agent: &mut Agent) -> Result<Vec<AgentIdentity>, String> {
    agent
        .request_identities()
        .await
        .map_err(|e| format!("list ssh-agent keys: {e}"))
}

/// One log-in attempt sequence on a connection.  Each `offer_*` returns
/// whether the host accepted; `Err` only if the connection failed.
struct Login<'a> {
    handle: &'a mut Handle<Client>,
    user: &'a str,
    rsa: Vec<Option<HashAlg>>,
}

impl Login<'_> {
    async fn offer_private(&mut self, key: &Arc<PrivateKey>) -> Result<bool, String> {
        for hash in hashes_for(key.algorithm(), &self.rsa) {
            let result = self
                .handle
                .authenticate_publickey(self.user, PrivateKeyWithHashAlg::new(key.clone(), hash))
                .await
                .map_err(|e| e.to_string())?;
            if result.success() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn offer_agent_key(
        &mut self,
        key: &PublicKey,
        agent: &mut Agent,
    ) -> Result<bool, String> {
        for hash in hashes_for(key.algorithm(), &self.rsa) {
            match self
                .handle
                .authenticate_publickey_with(self.user, key.clone(), hash, &mut AgentSigner(agent))
                .await
            {
                Ok(r) if r.success() => return Ok(true),
                Ok(_) => {}
                Err(SignError::Send(e)) => return Err(e.to_string()),
                Err(e) => {
                    tracing::debug!(error = %e, key = %describe_key(key), "ssh-agent did not sign")
                }
            }
        }
        Ok(false)
    }

    async fn offer_certificate<S>(
        &mut self,
        cert: &Certificate,
        signer: &mut S,
    ) -> Result<bool, String>
    where
        S: russh::Signer<Error = SignError>,
    {
        for hash in hashes_for(cert.algorithm(), &self.rsa) {
            match self
                .handle
                .authenticate_certificate_with(self.user, cert.clone(), hash, signer)
                .await
            {
                Ok(r) if r.success() => return Ok(true),
                Ok(_) => {}
                Err(SignError::Send(e)) => return Err(e.to_string()),
                Err(e) => tracing::debug!(error = %e, "could not sign for a certificate"),
            }
        }
        Ok(false)
    }

    /// A certificate beside `key_path` that does not certify `key` is an
    /// error (OpenSSH would skip it silently; a stale one is worth naming).
    fn check_certificate(
        cert_path: &Path,
        cert: &Certificate,
        key_path: &Path,
        key: &PublicKey,
    ) -> Result<(), String> {
        if cert.public_key() == key.key_data() {
            Ok(())
        } else {
            Err(format!(
                "the certificate {} certifies another key than {} ({}); sign that key again or remove the certificate",
                cert_path.display(),
                key_path.display(),
                describe_key(key)
            ))
        }
    }

    fn refused(
        &self,
        path: &Path,
        key: &PublicKey,
        cert: Option<&(PathBuf, Certificate)>,
        via: &str,
    ) -> String {
        let authorized = format!(
            "is its public key in ~{}/.ssh/authorized_keys there",
            self.user
        );
        match cert {
            None => format!(
                "the host refused the key {} ({}{via}); {authorized}?",
                path.display(),
                describe_key(key)
            ),
            Some((cert_path, cert)) => format!(
                "the host refused the certificate {} ({}) and the key {} ({}{via}); does the host \
                 trust the certificate's CA (sshd TrustedUserCAKeys), or {authorized}?",
                cert_path.display(),
                describe_certificate(cert, self.user, unix_now()),
                path.display(),
                describe_key(key)
            ),
        }
    }

    async fn with_identity_file(
        &mut self,
        path: &Path,
        agent_sock: Option<&Path>,
    ) -> Result<(), String> {
        let cert = read_certificate(path)?;
        match read_identity(path)? {
            IdentityKey::Plain(key) => {
                let public = key.public_key().clone();
                if let Some((cert_path, c)) = &cert {
                    Self::check_certificate(cert_path, c, path, &public)?;
                    if self
                        .offer_certificate(c, &mut FileSigner(key.clone()))
                        .await?
                    {
                        return Ok(());
                    }
                }
                if self.offer_private(&key).await? {
                    return Ok(());
                }
                Err(self.refused(path, &public, cert.as_ref(), ""))
            }
            IdentityKey::Encrypted(public) => {
                let p = path.display();
                let encrypted = |why: String| {
                    format!(
                        "the identity file {p} is encrypted (it has a passphrase) and ssh-agent \
                         does not hold it: load it with `ssh-add {p}` (fsmatrix never asks for \
                         passphrases){why}"
                    )
                };
                let Some(public) = public else {
                    return Err(encrypted(format!(
                        "; its public key is not readable without the passphrase either: put it \
                         in {p}.pub so that it can be found in the agent"
                    )));
                };
                let Some(sock) = agent_sock else {
                    return Err(encrypted(
                        "; no ssh-agent is running here (SSH_AUTH_SOCK is unset)".to_string(),
                    ));
                };
                let mut agent = connect_agent(sock)
                    .await
                    .map_err(|e| encrypted(format!("; could not {e}")))?;
                let held = agent_identities(&mut agent)
                    .await
                    .map_err(|e| encrypted(format!("; could not {e}")))?;
                let mut plain_held = false;
                let mut agent_certs = Vec::new();
                for identity in held {
                    match identity {
                        AgentIdentity::PublicKey { key, .. } => {
                            plain_held |= key.key_data() == public.key_data();
                        }
                        AgentIdentity::Certificate { certificate, .. } => {
                            if certificate.public_key() == public.key_data() {
                                agent_certs.push(certificate);
                            }
                        }
                    }
                }
                if !plain_held && agent_certs.is_empty() {
                    return Err(encrypted(String::new()));
                }
                if let Some((cert_path, c)) = &cert {
                    Self::check_certificate(cert_path, c, path, &public)?;
                    if self
                        .offer_certificate(c, &mut AgentSigner(&mut agent))
                        .await?
                    {
                        return Ok(());
                    }
                }
                for c in &agent_certs {
                    if self
                        .offer_certificate(c, &mut AgentSigner(&mut agent))
                        .await?
                    {
                        return Ok(());
                    }
                }
                if plain_held && self.offer_agent_key(&public, &mut agent).await? {
                    return Ok(());
                }
                Err(self.refused(path, &public, cert.as_ref(), ", signed by ssh-agent"))
            }
        }
    }

    async fn with_agent(&mut self, agent_sock: Option<&Path>) -> Result<(), String> {
        let Some(sock) = agent_sock else {
            return Err(
                "no identity_file is set and SSH_AUTH_SOCK is unset or empty: set \
                        identity_file in the inventory or start ssh-agent and add a key"
                    .to_string(),
            );
        };
        let mut agent = connect_agent(sock).await?;
        let identities = agent_identities(&mut agent).await?;
        if identities.is_empty() {
            return Err("ssh-agent holds no keys (add one with ssh-add)".to_string());
        }
        let mut offered = Vec::new();
        for identity in identities {
            match identity {
                AgentIdentity::PublicKey { key, comment } => {
                    if self.offer_agent_key(&key, &mut agent).await? {
                        return Ok(());
                    }
                    offered.push(format!("{} {comment}", describe_key(&key)));
                }
                AgentIdentity::Certificate {
                    certificate,
                    comment,
                } => {
                    if self
                        .offer_certificate(&certificate, &mut AgentSigner(&mut agent))
                        .await?
                    {
                        return Ok(());
                    }
                    offered.push(format!(
                        "certificate {comment} ({})",
                        describe_certificate(&certificate, self.user, unix_now())
                    ));
                }
            }
        }
        Err(format!(
            "the host refused every key ssh-agent offered: {}",
            offered.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsa_signs_with_sha2_unless_the_server_announces_only_sha1() {
        use HashAlg::{Sha256, Sha512};
        let table = [
            (Some(Some(Sha512)), vec![Some(Sha512), Some(Sha256)]),
            (Some(Some(Sha256)), vec![Some(Sha256)]),
            (Some(None), vec![None]),
            (None, vec![Some(Sha512), Some(Sha256)]),
        ];
        for (announced, expected) in table {
            assert_eq!(rsa_hashes(announced), expected, "{announced:?}");
        }
    }
}
