//! The uploader's side of the publish crate's blob sender ([`QueueHooks`], its
//! `SendHooks`): each multipart upload id (`mpu`) and stored part's ETag (`part`) is
//! journaled in the upload queue before the send goes on, so that a restarted daemon
//! resumes the same upload with the parts it has no ETag for; every put and part waits for
//! the bandwidth limit ([`Pacer`]); shutdown stops the send before a request and between
//! parts; the blob being sent and the bytes sent are shown in the view.

use std::sync::atomic::{AtomicBool, Ordering};

use wshard_publish::blob::{MultipartUpload, SendHooks, StoredPart};

use super::error::CycleError;
use super::pace::Pacer;
use super::queue::UploadQueue;
use super::record::Record;
use super::view::{CurrentBlob, UploadShared};

/// The hooks of one blob's send: file `file` of episode `episode`, content `sha256`.
#[derive(Debug)]
pub struct QueueHooks<'a> {
    pub queue: &'a mut UploadQueue,
    pub pacer: &'a mut Pacer,
    pub stop: &'a AtomicBool,
    pub shared: &'a UploadShared,
    pub episode: &'a str,
    pub file: &'a str,
    pub sha256: &'a str,
    pub size: u64,
}

impl SendHooks for QueueHooks<'_> {
    type Error = CycleError;

    fn keeps_uploads(&self) -> bool {
        true
    }

    fn progress(&mut self, parts_done: usize, parts_total: usize) {
        let current = CurrentBlob {
            episode: self.episode.to_owned(),
            file: self.file.to_owned(),
            size: self.size,
            parts_done,
            parts_total,
        };
        self.shared.update(|v| v.current = Some(current));
    }

    fn before_send(&mut self, bytes: u64) -> Result<(), CycleError> {
        if self.pacer.before_send(bytes, self.stop) {
            Ok(())
        } else {
            Err(CycleError::Stopped)
        }
    }

    fn upload_created(&mut self, upload: &MultipartUpload) -> Result<(), CycleError> {
        self.queue.record(Record::Mpu {
            sha256: self.sha256.to_owned(),
            key: upload.key.clone(),
            upload_id: upload.upload_id.clone(),
            part_size: upload.part_size,
        })?;
        Ok(())
    }

    fn part_stored(&mut self, part: &StoredPart<'_>) -> Result<(), CycleError> {
        self.queue.record(Record::Part {
            sha256: self.sha256.to_owned(),
            idx: part.idx,
            e_tag: part.e_tag.to_owned(),
        })?;
        self.shared.update(|v| {
            v.counters.sent_bytes += part.bytes;
            v.counters.parts_sent += 1;
            if let Some(c) = v.current.as_mut() {
                c.parts_done = part.parts_done;
            }
        });
        if self.stop.load(Ordering::Acquire) {
            return Err(CycleError::Stopped);
        }
        Ok(())
    }

    fn put_stored(&mut self, bytes: u64) {
        self.shared.update(|v| {
            v.counters.sent_bytes += bytes;
            if let Some(c) = v.current.as_mut() {
                c.parts_done = 1;
            }
        });
    }
}
