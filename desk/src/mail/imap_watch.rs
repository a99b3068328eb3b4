//! The support mailbox at `IMAP_URL`, watched: every message not yet taken
//! is fetched (`BODY.PEEK[]`, so nothing is marked read by looking), taken through
//! `mail::inbound` — once, by Message-ID, its UID recorded beside — and only after that
//! transaction committed is it flagged `\Seen $RefundDeskTaken`. A crash between the two
//! leaves it unflagged: the next pass fetches it again and finds it a duplicate. An
//! outage of the server loses nothing: the mail stays in the mailbox until a pass takes
//! it. Between passes the watcher waits in IMAP IDLE where the server offers it, else it
//! polls.
//!
//! `run_once` is one pass (tests call it); `watch_until_stopped` is `serve`'s loop. What
//! it does not do: delete or move mail (the mailbox stays the shop's record).

use std::fmt::Debug;
use std::time::Duration;

use async_imap::{Client, Session};
use futures_util::TryStreamExt;
use tokio::io::{AsyncRead, AsyncWrite};

use super::inbound;
use super::intake::Intake;
use crate::channels::mail::ImapTarget;
use crate::error::DomainError;

/// The keyword a taken message carries (with `\Seen`).
pub const TAKEN_FLAG: &str = "$RefundDeskTaken";
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a server without IDLE is polled.
pub const POLL_EVERY: Duration = Duration::from_secs(30);
/// How long one IDLE waits before it is renewed (RFC 2177: under 29 minutes).
const IDLE_FOR: Duration = Duration::from_secs(5 * 60);
/// The wait after a failed pass (the server is down) before the next try.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// A plain or TLS connection, as one type.
pub trait ImapIo: AsyncRead + AsyncWrite + Unpin + Send + Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Debug> ImapIo for T {}
type Stream = Box<dyn ImapIo>;

/// Connects and signs in.
async fn open(target: &ImapTarget) -> anyhow::Result<Session<Stream>> {
    let address = (target.host.as_str(), target.port);
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(address))
        .await
        .map_err(|_| anyhow::anyhow!("IMAP connect timed out"))??;
    let stream: Stream = if target.tls {
        Box::new(tls(tcp, &target.host).await?)
    } else {
        Box::new(tcp)
    };
    let mut client = Client::new(stream);
    client
        .read_response()
        .await?
        .ok_or_else(|| anyhow::anyhow!("the IMAP server closed before its greeting"))?;
    let session = client
        .login(&target.user, &target.password)
        .await
        .map_err(|(e, _)| anyhow::anyhow!("IMAP login: {e}"))?;
    Ok(session)
}

/// `imaps://`: TLS with the web's roots (rustls, as every other client here).
async fn tls(
    tcp: tokio::net::TcpStream,
    host: &str,
) -> anyhow::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())?;
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    Ok(connector.connect(name, tcp).await?)
}

/// One pass: connect, take every message not yet taken, sign out. Returns how many
/// messages were taken (duplicates and ignored mail included: each is flagged).
pub async fn run_once(intake: Intake<'_>, target: &ImapTarget) -> anyhow::Result<usize> {
    let mut session = open(target).await?;
    let taken = take_new(intake, &mut session, &target.mailbox).await?;
    let _ = session.logout().await;
    Ok(taken)
}

/// Takes every unflagged message of the mailbox, oldest UID first.
async fn take_new(
    intake: Intake<'_>,
    session: &mut Session<Stream>,
    mailbox: &str,
) -> anyhow::Result<usize> {
    let selected = session.select(mailbox).await?;
    let validity = selected.uid_validity.unwrap_or(0);
    let mut uids: Vec<u32> = session
        .uid_search(format!("UNKEYWORD {TAKEN_FLAG}"))
        .await?
        .into_iter()
        .collect();
    uids.sort_unstable();
    let mut taken = 0;
    for uid in uids {
        let Some(raw) = fetch(session, uid).await? else {
            continue;
        };
        let uid_key = format!("{validity}:{uid}");
        match inbound::take(intake, &raw, "imap", Some(&uid_key)).await {
            Ok(outcome) => {
                tracing::info!(uid, outcome = outcome.outcome.as_str(), reason = ?outcome.reason, "mailbox message taken");
            }
            // A message that is no mail, or too large, will never be taken: flagged so it
            // does not stop the mailbox, and logged for a person.
            Err(e @ (DomainError::BadRequest { .. } | DomainError::PayloadTooLarge(_))) => {
                tracing::error!(uid, error = %e, "mailbox message refused; flagged and left in the mailbox");
            }
            // The store is away: not flagged, taken on a later pass.
            Err(e) => return Err(anyhow::anyhow!("taking UID {uid}: {e}")),
        }
        flag(session, uid).await?;
        taken += 1;
    }
    Ok(taken)
}

/// One message's bytes, without marking it read.
async fn fetch(session: &mut Session<Stream>, uid: u32) -> anyhow::Result<Option<Vec<u8>>> {
    let fetched: Vec<_> = session
        .uid_fetch(uid.to_string(), "BODY.PEEK[]")
        .await?
        .try_collect()
        .await?;
    Ok(fetched.iter().find_map(|f| f.body().map(<[u8]>::to_vec)))
}

/// Marks a message taken (after its ticket committed).
async fn flag(session: &mut Session<Stream>, uid: u32) -> anyhow::Result<()> {
    let query = format!("+FLAGS (\\Seen {TAKEN_FLAG})");
    let _: Vec<_> = session
        .uid_store(uid.to_string(), query)
        .await?
        .try_collect()
        .await?;
    Ok(())
}

/// `serve`'s watcher: passes until `stopped` resolves, waiting between them in IDLE
/// where offered (new mail ends the wait at once), else `POLL_EVERY`; a failed pass (the
/// server is away) is logged and tried again after a few seconds.
pub async fn watch_until_stopped(
    intake: Intake<'_>,
    target: &ImapTarget,
    stopped: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stopped);
    loop {
        tokio::select! {
            result = watch(intake, target) => {
                if let Err(e) = result {
                    tracing::warn!(error = %e, "mailbox watch interrupted; retrying");
                }
            }
            _ = &mut stopped => return,
        }
        tokio::select! {
            _ = tokio::time::sleep(RETRY_AFTER) => {}
            _ = &mut stopped => return,
        }
    }
}

/// One connection's life: a pass, then a wait (IDLE or a poll interval), again.
async fn watch(intake: Intake<'_>, target: &ImapTarget) -> anyhow::Result<()> {
    let mut session = open(target).await?;
    let idle = session.capabilities().await?.has_str("IDLE");
    loop {
        take_new(intake, &mut session, &target.mailbox).await?;
        if !idle {
            tokio::time::sleep(POLL_EVERY).await;
            continue;
        }
        let mut handle = session.idle();
        handle.init().await?;
        let (wait, _interrupt) = handle.wait_with_timeout(IDLE_FOR);
        wait.await?;
        session = handle.done().await?;
    }
}
