//! Reaching a host: where it is ([`SshTarget`], its [`JumpHop`]s), each
//! SSH server on the way opened in turn (TCP or a `direct-tcpip` channel
//! of the hop before, the strict host-key check, then [`super::auth`]),
//! connect errors that name the hop, reconnects, and channel opening with
//! retries.
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use russh::client::{self, Handle, Msg};
use russh::keys::PublicKeyOrCertificate;

use super::auth::authenticate;
use super::SshRemote;
use crate::remote::known_hosts::{HostId, HostKeyError, KnownHosts};
use crate::remote::RemoteError;
use crate::timeouts::{KEEPALIVE_INTERVAL, RECONNECT_WINDOW};

const KEEPALIVE_MAX: usize = 3;
const OPEN_RETRIES: u32 = 6;

/// Where and how to reach one host.
#[derive(Debug, Clone)]
pub struct SshTarget {
    /// Inventory name, used in messages (and also looked up in known_hosts).
    pub host_name: String,
    pub address: String,
    pub port: u16,
    pub user: String,
    /// Private key file (OpenSSH, PEM or PKCS#8; RSA, ECDSA or Ed25519),
    /// the only key offered, with its `<file>-cert.pub` certificate if
    /// there is one; if it has a passphrase, ssh-agent must hold it.
    /// Several (an ssh config's IdentityFiles): each offered in order, as
    /// ssh does.  Empty: every key ssh-agent holds.  See
    /// [`SshRemote::connect_with_agent`].
    pub identity_files: Vec<PathBuf>,
    pub known_hosts: PathBuf,
    /// Limit for TCP connect + handshake + authentication.
    pub connect_timeout: Duration,
    /// Run every command through `sudo -n` or `doas -n` (inventory
    /// `become`, [`crate::remote::RemoteCommand::via`]): uploads, checksums
    /// and fetches too, so that the files fsmatrix makes and reads on the
    /// host are root's whichever user logs in.  `None`: as the login user.
    pub become_: Option<crate::text::Become>,
    /// Jump hosts, first hop first (OpenSSH `ProxyJump`); empty: direct.
    /// `connect_timeout` applies to each hop.
    pub jump: Vec<JumpHop>,
}

/// One jump host on the way to an [`SshTarget`].
#[derive(Debug, Clone)]
pub struct JumpHop {
    /// For messages: "jump host 1 (root@bastion.lab:22)" ([`JumpHop::label`]).
    pub name: String,
    /// Connected to from the hop before (or from here for the first), and
    /// looked up in known_hosts under this name, as OpenSSH does.
    pub address: String,
    pub port: u16,
    pub user: String,
    /// Private key files, offered in order; empty = ssh-agent through
    /// `SSH_AUTH_SOCK`.
    pub identity_files: Vec<PathBuf>,
    pub known_hosts: PathBuf,
}

impl JumpHop {
    /// The name of hop `index` (0-based) in messages.
    pub fn label(index: usize, user: &str, address: &str, port: u16) -> String {
        let addr = if address.contains(':') {
            format!("[{address}]")
        } else {
            address.to_string()
        };
        format!("jump host {} ({user}@{addr}:{port})", index + 1)
    }
}

/// The russh handler: strict known_hosts check, verdict kept for the caller.
pub(super) struct Client {
    known: KnownHosts,
    host: HostId,
    verdict: Arc<StdMutex<Option<HostKeyError>>>,
    /// The accepted key's SHA256 fingerprint.
    accepted: Arc<StdMutex<Option<String>>>,
}

impl client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        server_public_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let result = match server_public_key {
            PublicKeyOrCertificate::PublicKey { key, .. } => self.known.check(&self.host, key),
            PublicKeyOrCertificate::Certificate(_) => Err(self.known.certificate_error(&self.host)),
        };
        match result {
            Ok(()) => {
                if let (PublicKeyOrCertificate::PublicKey { key, .. }, Ok(mut a)) =
                    (server_public_key, self.accepted.lock())
                {
                    *a = Some(key.fingerprint(russh::keys::HashAlg::Sha256).to_string());
                }
                Ok(true)
            }
            Err(e) => {
                if let Ok(mut v) = self.verdict.lock() {
                    *v = Some(e);
                }
                Ok(false)
            }
        }
    }
}

/// An authenticated session and the jump-host sessions it runs through.
pub(super) struct Connection {
    pub(super) handle: Handle<Client>,
    /// First hop first; kept as long as `handle` (dropping one would end
    /// the tunnel the next hop runs in).
    pub(super) jumps: Vec<Handle<Client>>,
}

impl SshRemote {
    pub(super) async fn current(&self) -> (Arc<Handle<Client>>, u64) {
        let conn = self.conn.lock().await;
        (conn.handle.clone(), conn.generation)
    }

    /// Replace a dropped connection (once per generation: concurrent
    /// callers that saw the same dead connection share one reconnect).
    async fn reconnect(&self, seen_generation: u64) -> Result<Arc<Handle<Client>>, RemoteError> {
        let mut conn = self.conn.lock().await;
        if conn.generation != seen_generation && !conn.handle.is_closed() {
            return Ok(conn.handle.clone());
        }
        tracing::warn!(host = %self.target.host_name, "connection dropped; reconnecting");
        // A restarting sshd refuses for a moment, and a neighbour entry can
        // fail for a second after a link comes back: a connect error is tried
        // again (with backoff) until RECONNECT_WINDOW has passed.  A host key
        // or log-in refusal is final.
        let deadline = Instant::now() + RECONNECT_WINDOW;
        let mut wait = Duration::from_millis(500);
        let connection = loop {
            match open_connection(&self.target, self.agent_sock.as_deref()).await {
                Ok((c, _)) => break c,
                Err(e) if is_connect_error(&e) && Instant::now() + wait < deadline => {
                    tracing::warn!(host = %self.target.host_name, error = %e, ?wait, "reconnect failed; trying again");
                    tokio::time::sleep(wait).await;
                    wait = wait.saturating_mul(2);
                }
                Err(e) => return Err(e),
            }
        };
        let handle = Arc::new(connection.handle);
        let old_jumps = std::mem::replace(&mut conn.jumps, connection.jumps);
        // The old hops carried the dropped connection: close what is left.
        close_all(&old_jumps).await;
        conn.handle = handle.clone();
        conn.generation += 1;
        self.reconnects.fetch_add(1, Ordering::Relaxed);
        Ok(handle)
    }

    /// Open a channel with `open`, retrying `ChannelOpenFailure` with
    /// backoff and reconnecting once if the connection is gone.
    pub(super) async fn open_with<T, F, Fut>(
        &self,
        open: F,
    ) -> Result<(T, Arc<Handle<Client>>), RemoteError>
    where
        F: Fn(Arc<Handle<Client>>) -> Fut,
        Fut: std::future::Future<Output = Result<T, russh::Error>>,
    {
        self.open_retrying(open, OPEN_RETRIES).await
    }

    /// [`SshRemote::open_with`] with `retries` tries after a refused open.
    pub(super) async fn open_retrying<T, F, Fut>(
        &self,
        open: F,
        retries: u32,
    ) -> Result<(T, Arc<Handle<Client>>), RemoteError>
    where
        F: Fn(Arc<Handle<Client>>) -> Fut,
        Fut: std::future::Future<Output = Result<T, russh::Error>>,
    {
        let (mut handle, generation) = self.current().await;
        let mut reconnected = false;
        let mut attempt = 0;
        loop {
            if handle.is_closed() && !reconnected {
                handle = self.reconnect(generation).await?;
                reconnected = true;
            }
            match open(handle.clone()).await {
                Ok(ch) => return Ok((ch, handle)),
                Err(russh::Error::ChannelOpenFailure(reason)) if attempt < retries => {
                    attempt += 1;
                    // Idle persistent shells hold sessions: give them back
                    // to a server that allows fewer than we keep.
                    self.shells
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .clear();
                    let wait = Duration::from_millis(50 << attempt);
                    tracing::debug!(host = %self.target.host_name, ?reason, ?wait, "channel open refused; retrying");
                    tokio::time::sleep(wait).await;
                }
                Err(e) if !reconnected && handle.is_closed() => {
                    tracing::debug!(host = %self.target.host_name, error = %e, "channel open failed on a closed connection");
                    handle = self.reconnect(generation).await?;
                    reconnected = true;
                }
                Err(e) => {
                    return Err(self.channel_error(format!("could not open an SSH channel: {e}")))
                }
            }
        }
    }
}

/// A connect failure (worth trying again on reconnect), also at a jump host;
/// host key and log-in refusals are final.
fn is_connect_error(e: &RemoteError) -> bool {
    match e {
        RemoteError::Connect { .. } => true,
        RemoteError::Jump { source, .. } => is_connect_error(source),
        _ => false,
    }
}

/// One SSH server on the way: a jump host or the final host.
pub(super) struct Leg<'a> {
    /// Looked up in known_hosts (with the address) and named in messages.
    pub(super) id: HostId,
    pub(super) user: &'a str,
    pub(super) identity_files: &'a [PathBuf],
    /// ssh-agent's socket, if any.
    pub(super) agent_sock: Option<&'a Path>,
    known_hosts: &'a Path,
}

/// How a leg's byte stream is reached.
enum Via {
    Tcp,
    /// A `direct-tcpip` channel of the previous leg.
    Channel(Box<russh::ChannelStream<Msg>>),
}

/// Every hop, then the final host; each within `connect_timeout`.
pub(super) async fn open_connection(
    target: &SshTarget,
    agent_sock: Option<&Path>,
) -> Result<(Connection, String), RemoteError> {
    let mut jumps: Vec<Handle<Client>> = Vec::new();
    let mut via = Via::Tcp;
    let limit = target.connect_timeout;
    for (i, hop) in target.jump.iter().enumerate() {
        let leg = Leg {
            id: HostId {
                name: hop.address.clone(),
                address: hop.address.clone(),
                port: hop.port,
            },
            user: &hop.user,
            identity_files: &hop.identity_files,
            agent_sock,
            known_hosts: &hop.known_hosts,
        };
        let at_hop = |source: RemoteError| RemoteError::Jump {
            host: target.host_name.clone(),
            hop: hop.name.clone(),
            source: Box::new(source),
        };
        let (handle, _) = match open_leg(&leg, via, limit).await {
            Ok(h) => h,
            Err(e) => {
                close_all(&jumps).await;
                return Err(at_hop(e));
            }
        };
        // Where this hop must forward to: the next hop or the host.
        let (next_name, next_addr, next_port) = match target.jump.get(i + 1) {
            Some(n) => (n.name.as_str(), n.address.as_str(), n.port),
            None => (
                target.host_name.as_str(),
                target.address.as_str(),
                target.port,
            ),
        };
        let opened = tokio::time::timeout(
            limit,
            handle.channel_open_direct_tcpip(next_addr, u32::from(next_port), "127.0.0.1", 0),
        )
        .await;
        let reason = match opened {
            Ok(Ok(channel)) => {
                jumps.push(handle);
                via = Via::Channel(Box::new(channel.into_stream()));
                continue;
            }
            Ok(Err(russh::Error::ChannelOpenFailure(why))) => format!(
                "{} refused to forward to {next_addr}:{next_port} ({why:?}); is {next_name} up \
                 with sshd listening there, and does {} allow TCP forwarding (sshd \
                 AllowTcpForwarding)?",
                hop.name, hop.name
            ),
            Ok(Err(e)) => format!("{} could not forward to it: {e}", hop.name),
            Err(_) => format!(
                "{} did not open a forward to {next_addr}:{next_port} within {:.1} s \
                 (connect_timeout)",
                hop.name,
                limit.as_secs_f64()
            ),
        };
        jumps.push(handle);
        close_all(&jumps).await;
        let err = RemoteError::Connect {
            host: next_name.to_string(),
            address: next_addr.to_string(),
            port: next_port,
            reason,
        };
        // A later hop that cannot be reached is named as that hop.
        return Err(match target.jump.get(i + 1) {
            Some(n) => RemoteError::Jump {
                host: target.host_name.clone(),
                hop: n.name.clone(),
                source: Box::new(err),
            },
            None => err,
        });
    }
    let leg = Leg {
        id: HostId {
            name: target.host_name.clone(),
            address: target.address.clone(),
            port: target.port,
        },
        user: &target.user,
        identity_files: &target.identity_files,
        agent_sock,
        known_hosts: &target.known_hosts,
    };
    match open_leg(&leg, via, limit).await {
        Ok((handle, key)) => Ok((Connection { handle, jumps }, key)),
        Err(e) => {
            close_all(&jumps).await;
            Err(e)
        }
    }
}

/// Disconnect jump-host sessions, last hop first.
pub(super) async fn close_all(jumps: &[Handle<Client>]) {
    for j in jumps.iter().rev() {
        let _ = j
            .disconnect(russh::Disconnect::ByApplication, "", "en")
            .await;
    }
}

/// Connect (over TCP or a channel) + host key + auth, each within `limit`.
async fn open_leg(
    leg: &Leg<'_>,
    via: Via,
    limit: Duration,
) -> Result<(Handle<Client>, String), RemoteError> {
    let host = leg.id.clone();
    // Read before connecting: a missing file is an error, never "empty".
    let known = KnownHosts::read(leg.known_hosts, &host)?;
    let mut config = client::Config {
        keepalive_interval: Some(KEEPALIVE_INTERVAL),
        keepalive_max: KEEPALIVE_MAX,
        nodelay: true,
        ..Default::default()
    };
    if let Some(algorithms) = known.preferred_algorithms(&host, &config.preferred.key) {
        config.preferred.key = algorithms.into();
    }
    let verdict = Arc::new(StdMutex::new(None));
    let accepted = Arc::new(StdMutex::new(None));
    let handler = Client {
        known,
        host,
        verdict: verdict.clone(),
        accepted: accepted.clone(),
    };
    let connect_error = |reason: String| RemoteError::Connect {
        host: leg.id.name.clone(),
        address: leg.id.address.clone(),
        port: leg.id.port,
        reason,
    };
    let config = Arc::new(config);
    let connected = match via {
        Via::Tcp => {
            let addr = (leg.id.address.as_str(), leg.id.port);
            tokio::time::timeout(limit, client::connect(config, addr, handler)).await
        }
        Via::Channel(stream) => {
            tokio::time::timeout(limit, client::connect_stream(config, stream, handler)).await
        }
    };
    let mut handle = match connected {
        Err(_) => {
            return Err(connect_error(format!(
            "no SSH handshake within {:.1} s (connect_timeout); is the host up and sshd listening?",
            limit.as_secs_f64()
        )))
        }
        Ok(Err(e)) => {
            if let Some(host_key) = verdict.lock().ok().and_then(|mut v| v.take()) {
                return Err(host_key.into());
            }
            return Err(connect_error(describe_connect_error(&e)));
        }
        Ok(Ok(h)) => h,
    };
    match tokio::time::timeout(limit, authenticate(&mut handle, leg)).await {
        Err(_) => Err(RemoteError::Auth {
            host: leg.id.name.clone(),
            user: leg.user.to_string(),
            reason: format!("no answer within {:.1} s", limit.as_secs_f64()),
        }),
        Ok(Err(e)) => Err(e),
        Ok(Ok(())) => {
            let key = accepted
                .lock()
                .ok()
                .and_then(|mut a| a.take())
                .unwrap_or_default();
            Ok((handle, key))
        }
    }
}

fn describe_connect_error(e: &russh::Error) -> String {
    match e {
        russh::Error::IO(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused (is sshd running on that port?)".to_string()
        }
        other => other.to_string(),
    }
}
