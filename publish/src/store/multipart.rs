//! Resumable multipart uploads: the four S3 steps as separate blocking calls, so that the
//! blob sender (`crate::blob`) can hand the upload id and each part's ETag to a caller that
//! journals them (the daemon's upload queue) and, after a crash, a kill or a reboot, send
//! only the parts it has no ETag for.
//!
//! Built on object_store's [`MultipartStore`], implemented by all three providers: on S3
//! and GCS (its XML multipart API) the upload id is the store's and part `idx` (0-based) is
//! part number `idx + 1`; on Azure the parts are uncommitted blocks of the blob (random
//! block ids, returned as the part "ETag"), the upload id is [`AZURE_UPLOAD_ID`], abort is
//! a no-op (the store drops uncommitted blocks after 7 days, or when another block list is
//! committed to the blob), and a block list naming a block the store no longer has is
//! `InvalidBlockList`: [`PublishError::UploadGone`].
//!
//! An upload the store no longer knows is [`PublishError::UploadGone`]: S3 answers
//! `NoSuchUpload` (expired by a lifecycle rule, aborted, lost); s3s-fs 0.14.1 answers
//! `AccessDenied` for an unknown upload id, the same reply as for a key the credentials may
//! not write. On an `AccessDenied` to a part, complete or abort, [`Store`] therefore asks
//! the store whether it would start a new upload at the same key (and aborts that probe at
//! once): if it would, the refusal was about the upload id (`UploadGone`); if not, it is
//! the real [`PublishError::Forbidden`].

use bytes::Bytes;
use object_store::multipart::PartId;
use object_store::path::Path;
use object_store::PutPayload;

use super::classify::ProviderCodes;
use super::Store;
use crate::error::PublishError;
use crate::provider::Provider;

fn typed_err(e: PublishError) -> Result<String, PublishError> {
    Err(e)
}

/// The operation a failed part upload names (`PublishError::StoreUnavailable::op`).
pub const OP_UPLOAD_PART: &str = "upload part";
/// The operation a failed completion names.
pub const OP_COMPLETE_MULTIPART: &str = "complete multipart";

/// The upload id of an Azure upload. Azure has no upload object: parts are uncommitted
/// blocks of the blob, committed by the block list; object_store's id is empty, this is
/// what callers journal instead (ignored on the way back).
pub const AZURE_UPLOAD_ID: &str = "azure-uncommitted-blocks";

impl Store {
    /// Start a multipart upload at `key` (S3 CreateMultipartUpload); returns the upload id
    /// to journal.
    ///
    /// # Errors
    /// Typed store errors.
    pub fn create_multipart(&self, key: &str) -> Result<String, PublishError> {
        let id = self
            .rt
            .block_on(self.multipart.create_multipart(&Path::from(key)))
            .map_err(|e| self.classify("create multipart", key, e))?;
        Ok(
            if id.is_empty() && self.config.provider == Provider::Azure {
                AZURE_UPLOAD_ID.to_owned()
            } else {
                id
            },
        )
    }

    /// Send part `part_idx` (0-based; S3 part number `part_idx + 1`) of the upload
    /// `upload_id` at `key`; returns the part's ETag to journal. Every part but the last
    /// must be at least 5 MiB; sending the same index again replaces that part. After a
    /// failed call the part is undefined on the store: send it again before completing.
    ///
    /// # Errors
    /// [`PublishError::UploadGone`] when the store no longer knows the upload (start a new
    /// one); other typed store errors.
    pub fn put_part(
        &self,
        key: &str,
        upload_id: &str,
        part_idx: usize,
        data: Bytes,
    ) -> Result<String, PublishError> {
        let id = upload_id.to_owned();
        let path = Path::from(key);
        let sent = self.rt.block_on(self.multipart.put_part(
            &path,
            &id,
            part_idx,
            PutPayload::from(data.clone()),
        ));
        let e = match sent {
            Ok(p) => return Ok(p.content_id),
            Err(e) => e,
        };
        let typed = self.classify_upload(OP_UPLOAD_PART, key, upload_id, e);
        if data.is_empty()
            || !matches!(
                typed,
                PublishError::EndpointUnreachable { .. } | PublishError::StoreUnavailable { .. }
            )
        {
            return typed_err(typed);
        }
        // A server that refuses a part (an unknown upload id) before reading its body may
        // close the connection under the client's feet: the refusal then looks like a broken
        // connection (seen with s3s-fs, about one time in five with 5 MiB parts). Ask again
        // with an empty body to hear the verdict; a live upload gets an empty part `part_idx`,
        // which the caller sends again anyway (it has no ETag for it).
        let verdict = self
            .rt
            .block_on(
                self.multipart
                    .put_part(&path, &id, part_idx, PutPayload::default()),
            )
            .map_err(|e| self.classify_upload(OP_UPLOAD_PART, key, upload_id, e));
        match verdict {
            Err(gone @ PublishError::UploadGone { .. }) => typed_err(gone),
            _ => typed_err(typed),
        }
    }

    /// Complete the upload with the ETags of parts `0..n`, in order (at least one).
    ///
    /// # Errors
    /// [`PublishError::InvalidConfig`] for no ETag; [`PublishError::UploadGone`] when the
    /// store no longer knows the upload (it may have been completed already: HEAD the key);
    /// other typed store errors.
    pub fn complete_multipart(
        &self,
        key: &str,
        upload_id: &str,
        e_tags: &[String],
    ) -> Result<(), PublishError> {
        if e_tags.is_empty() {
            // object_store would send an empty part 0 of its own: never behind our back.
            return Err(PublishError::InvalidConfig {
                field: "e_tags",
                reason: format!("complete multipart {key}: no part to complete with"),
            });
        }
        let parts = e_tags
            .iter()
            .map(|t| PartId {
                content_id: t.clone(),
            })
            .collect();
        let id = upload_id.to_owned();
        self.rt
            .block_on(
                self.multipart
                    .complete_multipart(&Path::from(key), &id, parts),
            )
            .map(|_| ())
            .map_err(|e| self.classify_upload(OP_COMPLETE_MULTIPART, key, upload_id, e))
    }

    /// Abort the upload (its parts are dropped by the store).
    ///
    /// # Errors
    /// [`PublishError::UploadGone`] when the store does not know it (nothing to abort);
    /// other typed store errors.
    pub fn abort_multipart(&self, key: &str, upload_id: &str) -> Result<(), PublishError> {
        let id = upload_id.to_owned();
        self.rt
            .block_on(self.multipart.abort_multipart(&Path::from(key), &id))
            .map_err(|e| self.classify_upload("abort multipart", key, upload_id, e))
    }

    /// [`Store::classify`] for a step of an existing upload, with `NoSuchUpload` (and
    /// s3s-fs' `AccessDenied` for an unknown upload id, told apart by a probe) as
    /// [`PublishError::UploadGone`].
    fn classify_upload(
        &self,
        op: &'static str,
        key: &str,
        upload_id: &str,
        e: object_store::Error,
    ) -> PublishError {
        let detail = e.to_string();
        let gone = || PublishError::UploadGone {
            key: key.to_owned(),
            upload_id: upload_id.to_owned(),
            detail: detail.clone(),
        };
        if ProviderCodes::of(self.config.provider)
            .upload_gone
            .iter()
            .any(|c| detail.contains(c))
        {
            return gone();
        }
        let typed = self.classify(op, key, e);
        // The probe is for s3s-fs' reply to an unknown upload id (S3 only).
        if self.config.provider == Provider::S3
            && matches!(typed, PublishError::Forbidden { .. })
            && self.may_start_upload(key)
        {
            return gone();
        }
        typed
    }

    /// Whether the store would start a new upload at `key` (the probe is aborted at once).
    fn may_start_upload(&self, key: &str) -> bool {
        let path = Path::from(key);
        self.rt.block_on(async {
            match self.multipart.create_multipart(&path).await {
                Ok(id) => {
                    // Best effort: an abandoned probe holds no part, and stores expire them.
                    let _ = self.multipart.abort_multipart(&path, &id).await;
                    true
                }
                Err(_) => false,
            }
        })
    }
}
