//! A multipart upload of one file, new or resumed ([`upload`]): the upload id is given to
//! the caller before the first part, each part's ETag once the store has it, and a part
//! with an ETag is never sent again. A store that lost the upload (`UploadGone`) gets a
//! new one, from part 0, at most [`MAX_FRESH_UPLOADS`] times in one send.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use bytes::Bytes;

use super::error::SendError;
use super::hooks::{SendHooks, StoredPart};
use super::parts::{part_count, part_len, MultipartUpload};
use crate::error::PublishError;
use crate::store::Store;

/// New multipart uploads of one blob in one send before giving up (the store keeps losing
/// them).
pub const MAX_FRESH_UPLOADS: usize = 3;

/// Send the file at `path` (`size` bytes) to `key` as a multipart upload, going on with
/// `resume` when given. A failed upload is aborted unless the hooks keep uploads.
pub(super) fn upload<H: SendHooks>(
    store: &Store,
    key: &str,
    path: &Path,
    size: u64,
    resume: Option<&MultipartUpload>,
    hooks: &mut H,
) -> Result<(), SendError<H::Error>> {
    let mut file = File::open(path).map_err(|e| SendError::Local(PublishError::io(path, e)))?;
    let mut mpu = match resume {
        Some(m) => m.clone(),
        None => new_upload(store, key, size, hooks)?,
    };
    let sent = send_parts(store, key, &mut file, path, size, &mut mpu, hooks);
    if sent.is_err() && !hooks.keeps_uploads() {
        // Best effort: the store also expires abandoned uploads by its lifecycle rule.
        let _ = store.abort_multipart(key, &mpu.upload_id);
    }
    sent
}

/// Create a multipart upload and give it to the hooks (before any part is sent).
fn new_upload<H: SendHooks>(
    store: &Store,
    key: &str,
    size: u64,
    hooks: &mut H,
) -> Result<MultipartUpload, SendError<H::Error>> {
    let part_size = store.options().part_size as u64;
    let upload_id = store.create_multipart(key).map_err(SendError::Store)?;
    let mpu = MultipartUpload::new(key, upload_id, part_size);
    hooks.upload_created(&mpu).map_err(SendError::Hook)?;
    hooks.progress(0, part_count(size, part_size));
    Ok(mpu)
}

/// Send the parts `mpu` has no ETag for, then complete it; `mpu` is replaced by a new
/// upload when the store lost it.
fn send_parts<H: SendHooks>(
    store: &Store,
    key: &str,
    file: &mut File,
    path: &Path,
    size: u64,
    mpu: &mut MultipartUpload,
    hooks: &mut H,
) -> Result<(), SendError<H::Error>> {
    let mut fresh_uploads = 0;
    'upload: loop {
        let n = part_count(size, mpu.part_size);
        for idx in 0..n {
            if mpu.parts.contains_key(&idx) {
                continue;
            }
            let len = part_len(size, mpu.part_size, idx);
            let mut buf = vec![0_u8; usize::try_from(len).unwrap_or(0)];
            file.seek(SeekFrom::Start(idx as u64 * mpu.part_size))
                .and_then(|_| file.read_exact(&mut buf))
                .map_err(|e| SendError::Local(PublishError::io(path, e)))?;
            hooks.before_send(len).map_err(SendError::Hook)?;
            match store.put_part(key, &mpu.upload_id, idx, Bytes::from(buf)) {
                Ok(e_tag) => {
                    mpu.parts.insert(idx, e_tag.clone());
                    let part = StoredPart {
                        idx,
                        e_tag: &e_tag,
                        bytes: len,
                        parts_done: mpu.parts.len(),
                    };
                    hooks.part_stored(&part).map_err(SendError::Hook)?;
                }
                Err(PublishError::UploadGone { .. }) if fresh_uploads < MAX_FRESH_UPLOADS => {
                    tracing::warn!(
                        key,
                        "upload: the store lost the multipart upload; starting a new one"
                    );
                    fresh_uploads += 1;
                    *mpu = new_upload(store, key, size, hooks)?;
                    continue 'upload;
                }
                Err(e) => return Err(SendError::Store(e)),
            }
        }
        let e_tags: Vec<String> = (0..n).filter_map(|i| mpu.parts.get(&i).cloned()).collect();
        match store.complete_multipart(key, &mpu.upload_id, &e_tags) {
            Ok(()) => return Ok(()),
            Err(PublishError::UploadGone { .. }) => {
                // Completed before a crash? The verification that follows tells.
                if store.head_size(key).map_err(SendError::Store)? == Some(size) {
                    return Ok(());
                }
                if fresh_uploads >= MAX_FRESH_UPLOADS {
                    return Err(SendError::Store(PublishError::Store {
                        op: "complete multipart",
                        key: key.to_owned(),
                        detail: "the store keeps losing the upload".into(),
                    }));
                }
                fresh_uploads += 1;
                *mpu = new_upload(store, key, size, hooks)?;
            }
            Err(e) => return Err(SendError::Store(e)),
        }
    }
}
