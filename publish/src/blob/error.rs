//! [`SendError`]: why sending a blob failed, sorted by who can act on it.

use std::convert::Infallible;

use crate::error::PublishError;

/// Why a send failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError<E> {
    /// The store failed, or holds another content under the key after the send (that copy
    /// was deleted: send the blob again).
    #[error(transparent)]
    Store(PublishError),
    /// The local file cannot be read ([`PublishError::Io`]) or no longer has the content
    /// it is named by ([`PublishError::LocalFileChanged`]).
    #[error(transparent)]
    Local(PublishError),
    /// A hook of the caller failed.
    #[error(transparent)]
    Hook(E),
}

impl From<SendError<Infallible>> for PublishError {
    fn from(e: SendError<Infallible>) -> Self {
        match e {
            SendError::Store(e) | SendError::Local(e) => e,
            SendError::Hook(never) => match never {},
        }
    }
}
