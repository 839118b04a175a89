//! What the caller of a send does at its steps ([`SendHooks`]): the daemon's uploader
//! journals the upload id and each part's ETag, paces the sends and shows the progress;
//! `wshard publish` does none of it ([`NoHooks`]).

use std::convert::Infallible;

use super::parts::MultipartUpload;

/// A part the store has just stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredPart<'a> {
    /// Its index (0-based).
    pub idx: usize,
    /// Its ETag, to complete the upload with.
    pub e_tag: &'a str,
    /// Its length.
    pub bytes: u64,
    /// Parts of the upload stored now, this one included.
    pub parts_done: usize,
}

/// The caller's side of a send ([`super::BlobSender::send`]).
pub trait SendHooks {
    /// What a hook fails with (the daemon: its queue log, or shutdown); it ends the send as
    /// [`super::SendError::Hook`].
    type Error;

    /// Whether the multipart uploads given to [`SendHooks::upload_created`] are kept to be
    /// resumed after a failed send. When false, a failed multipart upload is aborted.
    fn keeps_uploads(&self) -> bool;

    /// The send starts, or starts over with a new multipart upload: `parts_done` of
    /// `parts_total` parts are stored (a single put is one part).
    fn progress(&mut self, parts_done: usize, parts_total: usize);

    /// `bytes` are about to be sent (one put or one part): wait for the bandwidth, or
    /// refuse (shutdown).
    ///
    /// # Errors
    /// The caller's: the send stops before the request.
    fn before_send(&mut self, bytes: u64) -> Result<(), Self::Error>;

    /// A multipart upload was created, before any part of it is sent: save it to resume.
    ///
    /// # Errors
    /// The caller's: the send stops before any part is sent.
    fn upload_created(&mut self, upload: &MultipartUpload) -> Result<(), Self::Error>;

    /// A part is stored: save its ETag (it is never sent again).
    ///
    /// # Errors
    /// The caller's; also the place to stop between parts (shutdown): the upload is left
    /// as it is, to resume.
    fn part_stored(&mut self, part: &StoredPart<'_>) -> Result<(), Self::Error>;

    /// The single put of `bytes` is stored.
    fn put_stored(&mut self, bytes: u64);
}

/// Nothing saved, nothing paced: a failed multipart upload is aborted and the blob is sent
/// whole by the next run (`wshard publish`, the exports).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl SendHooks for NoHooks {
    type Error = Infallible;

    fn keeps_uploads(&self) -> bool {
        false
    }

    fn progress(&mut self, _parts_done: usize, _parts_total: usize) {}

    fn before_send(&mut self, _bytes: u64) -> Result<(), Infallible> {
        Ok(())
    }

    fn upload_created(&mut self, _upload: &MultipartUpload) -> Result<(), Infallible> {
        Ok(())
    }

    fn part_stored(&mut self, _part: &StoredPart<'_>) -> Result<(), Infallible> {
        Ok(())
    }

    fn put_stored(&mut self, _bytes: u64) {}
}
