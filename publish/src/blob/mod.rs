//! Sending one blob (a file of an episode, or the catalog, content-addressed by its
//! SHA-256): the one sender `wshard publish` and the daemon's uploader share
//! ([`BlobSender`]).
//!
//! 1. HEAD its key: the store already holds that size -> nothing is sent
//!    ([`BlobAction::AlreadyStored`]); with [`StoredCopies::Verify`] only once the stored
//!    copy hashes to the name (this also finishes a multipart upload completed just
//!    before a crash), another content under the name is written again.
//! 2. Below the multipart threshold: read it, check its SHA-256 (a file changed since it
//!    was hashed is [`crate::PublishError::LocalFileChanged`]), one put.
//! 3. Else a multipart upload in `part_size` parts, resumed from a saved
//!    [`MultipartUpload`] when the caller has one: parts with an ETag are never sent again.
//!    The caller's [`SendHooks`] get the upload id before the first part and each part's
//!    ETag after the store answered (the daemon journals them); a store that lost the
//!    upload (`UploadGone`) gets a new one, from part 0. Without a caller that keeps the
//!    upload ([`NoHooks`]), a failed upload is aborted.
//! 4. Verify: the SHA-256 and size of a streamed GET. A mismatch deletes the remote copy
//!    and is [`crate::PublishError::BlobMismatch`], or `LocalFileChanged` when the local
//!    file no longer hashes to its name.
//!
//! Every send (one put or one part) first asks [`SendHooks::before_send`]: the daemon's
//! bandwidth pacing and shutdown.
//!
//! The room calls the [`crate::store::Store`] (requests and the multipart primitives), the
//! local hashing of [`crate::episodes`] and `wshard::digest`, and the typed errors;
//! `publish` and `append` call it, never the other way.
//!
//! - [`send`]: [`BlobSender`], [`Blob`] and where its bytes are, [`BlobAction`].
//! - `resumable`: the multipart upload, new or resumed.
//! - [`parts`]: [`MultipartUpload`] (what a caller saves to resume) and the part sizes.
//! - [`hooks`]: [`SendHooks`] and [`NoHooks`].
//! - [`error`]: why a send failed, [`SendError`].

pub mod error;
pub mod hooks;
pub mod parts;
mod resumable;
pub mod send;

pub use error::SendError;
pub use hooks::{NoHooks, SendHooks, StoredPart};
pub use parts::{part_count, part_len, MultipartUpload};
pub use send::{Blob, BlobAction, BlobSender, BlobSource, StoredCopies};
