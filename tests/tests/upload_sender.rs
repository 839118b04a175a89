//! `upload_sender_*`: the blob sender both `wshard publish` and the daemon's uploader send
//! with (`wshard_publish::blob::BlobSender`), against a real s3s-fs 0.14.1: a multipart
//! upload stopped by the caller's hook is resumed from the upload it saved, sending only
//! the parts it has no ETag for; without a caller that keeps uploads a failed one is
//! aborted; a file changed since it was hashed is refused, nothing of it on the store.

use std::path::Path;

use wshard::digest::sha256_hex;
use wshard_e2e::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY};
use wshard_publish::blob::{
    Blob, BlobAction, BlobSender, BlobSource, MultipartUpload, NoHooks, SendError, SendHooks,
    StoredPart,
};
use wshard_publish::config::MIN_PART_SIZE;
use wshard_publish::{Credentials, PublishError, Store, StoreConfig, TransferOptions};

/// Multipart for everything of at least one part, in parts of S3's smallest size.
fn store(endpoint: &str) -> Store {
    let cfg = StoreConfig {
        provider: wshard_publish::Provider::S3,
        endpoint: endpoint.to_owned(),
        bucket: BUCKET.to_owned(),
        prefix: String::new(),
        region: "us-east-1".into(),
        allow_http: true,
    };
    let opts = TransferOptions {
        multipart_threshold: MIN_PART_SIZE as u64,
        part_size: MIN_PART_SIZE,
        max_retries: 1,
        connect_timeout: std::time::Duration::from_secs(2),
        retry_timeout: std::time::Duration::from_secs(5),
    };
    Store::new(cfg, &Credentials::new(ACCESS_KEY, SECRET_KEY), opts).expect("store")
}

/// `len` bytes that do not repeat within a part.
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ seed;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn blob_key(sha: &str) -> String {
    format!("blobs/sha256/{}/{sha}", &sha[..2])
}

/// Upload ids s3s-fs holds open (its `.upload-<id>.json` files).
fn open_uploads(s3: &S3Server) -> usize {
    std::fs::read_dir(s3.store_root())
        .expect("store root")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".upload-"))
        .count()
}

/// Hooks that save the upload as the daemon's queue does, and stop after `stop_after`
/// parts (shutdown between parts).
#[derive(Default)]
struct Saving {
    saved: Option<MultipartUpload>,
    parts_sent: usize,
    bytes_paced: u64,
    stop_after: Option<usize>,
}

#[derive(Debug, PartialEq, Eq)]
struct Stopped;

impl SendHooks for Saving {
    type Error = Stopped;

    fn keeps_uploads(&self) -> bool {
        true
    }

    fn progress(&mut self, _parts_done: usize, _parts_total: usize) {}

    fn before_send(&mut self, bytes: u64) -> Result<(), Stopped> {
        self.bytes_paced += bytes;
        Ok(())
    }

    fn upload_created(&mut self, upload: &MultipartUpload) -> Result<(), Stopped> {
        self.saved = Some(upload.clone());
        Ok(())
    }

    fn part_stored(&mut self, part: &StoredPart<'_>) -> Result<(), Stopped> {
        if let Some(m) = self.saved.as_mut() {
            m.parts.insert(part.idx, part.e_tag.to_owned());
        }
        self.parts_sent += 1;
        if Some(self.parts_sent) == self.stop_after {
            return Err(Stopped);
        }
        Ok(())
    }

    fn put_stored(&mut self, _bytes: u64) {}
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    path
}

#[test]
fn upload_sender_resumes_the_saved_upload_and_sends_only_the_missing_parts() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir_in("/tmp").expect("tempdir");
    let data = payload(MIN_PART_SIZE * 2 + MIN_PART_SIZE / 2, 1);
    let path = write(dir.path(), "big", &data);
    let sha = sha256_hex(&data);
    let key = blob_key(&sha);
    let blob = Blob {
        key: &key,
        sha256: &sha,
        size: data.len() as u64,
        source: BlobSource::File(&path),
    };
    // The first send stops after two parts; the upload stays open, saved by the hooks.
    let mut first = Saving {
        stop_after: Some(2),
        ..Saving::default()
    };
    let st = store(s3.endpoint());
    let sender = BlobSender::new(&st);
    match sender.send(&blob, None, &mut first) {
        Err(SendError::Hook(Stopped)) => {}
        other => panic!("expected the hook's stop, got {other:?}"),
    }
    let saved = first.saved.expect("the upload was saved");
    assert_eq!(saved.parts.len(), 2);
    assert_eq!(open_uploads(&s3), 1, "a kept upload is not aborted");
    assert_eq!(st.head_size(&key).expect("head"), None);
    // A new process resumes it: one part sent, the same upload completed and verified.
    let mut second = Saving::default();
    let st = store(s3.endpoint());
    let action = BlobSender::new(&st)
        .send(&blob, Some(&saved), &mut second)
        .expect("resumed send");
    assert_eq!(action, BlobAction::Uploaded { multipart: true });
    assert_eq!(second.parts_sent, 1);
    assert_eq!(second.bytes_paced, (MIN_PART_SIZE / 2) as u64);
    assert!(second.saved.is_none(), "no new upload was created");
    assert_eq!(
        st.hash_remote(&key).expect("hash"),
        (sha.clone(), data.len() as u64)
    );
    assert_eq!(open_uploads(&s3), 0);
    // Sent again: the store has it, nothing is sent.
    let action = sender.send(&blob, None, &mut NoHooks).expect("again");
    assert_eq!(action, BlobAction::AlreadyStored);
}

#[test]
fn upload_sender_without_saving_aborts_a_failed_upload() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir_in("/tmp").expect("tempdir");
    let data = payload(MIN_PART_SIZE * 2, 2);
    let path = write(dir.path(), "big", &data);
    let sha = sha256_hex(&data);
    let key = blob_key(&sha);
    // Declared one part longer than the file: the last part cannot be read.
    let blob = Blob {
        key: &key,
        sha256: &sha,
        size: (MIN_PART_SIZE * 3) as u64,
        source: BlobSource::File(&path),
    };
    let st = store(s3.endpoint());
    match BlobSender::new(&st).send(&blob, None, &mut NoHooks) {
        Err(SendError::Local(PublishError::Io { .. })) => {}
        other => panic!("expected the local read error, got {other:?}"),
    }
    assert_eq!(open_uploads(&s3), 0, "the failed upload was not aborted");
    assert_eq!(st.head_size(&key).expect("head"), None);
}

#[test]
fn upload_sender_file_changed_since_hashed_is_refused_and_nothing_is_kept() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir_in("/tmp").expect("tempdir");
    let st = store(s3.endpoint());
    let sender = BlobSender::new(&st);
    for (name, len) in [("small", 1000), ("big", MIN_PART_SIZE + 10)] {
        let hashed = payload(len, 3);
        let sha = sha256_hex(&hashed);
        let key = blob_key(&sha);
        let mut now = hashed.clone();
        now[len / 2] ^= 0xff;
        let path = write(dir.path(), name, &now);
        let blob = Blob {
            key: &key,
            sha256: &sha,
            size: len as u64,
            source: BlobSource::File(&path),
        };
        match sender.send(&blob, None, &mut NoHooks) {
            Err(SendError::Local(PublishError::LocalFileChanged {
                path: p,
                expected,
                found,
            })) => {
                assert_eq!((p, expected), (path.clone(), sha.clone()), "{name}");
                assert_eq!(found, sha256_hex(&now), "{name}");
            }
            other => panic!("{name}: expected LocalFileChanged, got {other:?}"),
        }
        assert_eq!(st.head_size(&key).expect("head"), None, "{name}");
    }
    // The catalog's bytes in memory: one put whatever their size, verified.
    let bytes = bytes::Bytes::from(payload(MIN_PART_SIZE + 1, 4));
    let sha = sha256_hex(&bytes);
    let key = blob_key(&sha);
    let blob = Blob {
        key: &key,
        sha256: &sha,
        size: bytes.len() as u64,
        source: BlobSource::Memory(&bytes),
    };
    let action = sender.send(&blob, None, &mut NoHooks).expect("memory");
    assert_eq!(action, BlobAction::Uploaded { multipart: false });
}
