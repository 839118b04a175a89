//! `publish_multipart_*`: the resumable multipart primitives of `wshard_publish::Store`
//! (create, put part, complete, abort) against a real s3s-fs 0.14.1: an upload resumed by a
//! new process with the saved upload id and ETags, an upload the store no longer knows, and
//! what s3s-fs keeps across its own restart.

use bytes::Bytes;
use wshard_e2e::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY};
use wshard_publish::config::MIN_PART_SIZE;
use wshard_publish::hash::sha256_hex;
use wshard_publish::{Credentials, PublishError, Store, StoreConfig, TransferOptions};

const KEY: &str = "blobs/sha256/ab/multipart-test";
/// A phantom upload id in s3s-fs' format (a UUID) that was never created.
const BOGUS_UPLOAD_ID: &str = "0f6a3c1e-6a43-4c5e-9a2f-1b2c3d4e5f60";

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
        part_size: MIN_PART_SIZE,
        max_retries: 1,
        connect_timeout: std::time::Duration::from_secs(2),
        retry_timeout: std::time::Duration::from_secs(5),
        ..TransferOptions::default()
    };
    Store::new(cfg, &Credentials::new(ACCESS_KEY, SECRET_KEY), opts).expect("store")
}

/// 2.5 parts of 5 MiB of non-repeating bytes.
fn payload() -> Vec<u8> {
    let len = MIN_PART_SIZE * 2 + MIN_PART_SIZE / 2;
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn part(data: &[u8], idx: usize) -> Bytes {
    let end = ((idx + 1) * MIN_PART_SIZE).min(data.len());
    Bytes::copy_from_slice(&data[idx * MIN_PART_SIZE..end])
}

/// The `.upload_id-<id>.part-N` files s3s-fs holds for an upload.
fn stored_parts(s3: &S3Server, upload_id: &str) -> usize {
    let prefix = format!(".upload_id-{upload_id}.part-");
    std::fs::read_dir(s3.store_root())
        .expect("store root")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .count()
}

#[test]
fn publish_multipart_resumes_in_a_new_process_with_the_saved_upload_id() {
    let s3 = S3Server::start();
    let data = payload();
    // The first "process": starts the upload, sends parts 0 and 1, journals id and ETags.
    let (upload_id, mut e_tags) = {
        let first = store(s3.endpoint());
        let id = first.create_multipart(KEY).expect("create");
        let tags: Vec<String> = (0..2)
            .map(|i| first.put_part(KEY, &id, i, part(&data, i)).expect("part"))
            .collect();
        (id, tags)
    };
    assert_eq!(stored_parts(&s3, &upload_id), 2);
    assert!(
        e_tags.iter().all(|t| !t.is_empty()),
        "ETags to journal: {e_tags:?}"
    );
    // Nothing is at the key until the upload completes.
    assert_eq!(store(s3.endpoint()).head_size(KEY).expect("head"), None);
    // A new process (new Store, nothing in memory) resumes: only the missing part is sent.
    let second = store(s3.endpoint());
    e_tags.push(
        second
            .put_part(KEY, &upload_id, 2, part(&data, 2))
            .expect("last part"),
    );
    second
        .complete_multipart(KEY, &upload_id, &e_tags)
        .expect("complete");
    let (sha, size) = second.hash_remote(KEY).expect("hash");
    assert_eq!(size, data.len() as u64);
    assert_eq!(sha, sha256_hex(&data));
    // Completed: the store forgets the upload; finishing it again says so.
    let again = second.complete_multipart(KEY, &upload_id, &e_tags);
    match again {
        Err(PublishError::UploadGone { upload_id: id, .. }) => assert_eq!(id, upload_id),
        other => panic!("expected UploadGone, got {other:?}"),
    }
}

#[test]
fn publish_multipart_unknown_or_aborted_upload_is_upload_gone() {
    let s3 = S3Server::start();
    let st = store(s3.endpoint());
    let data = payload();
    // An upload id the store never gave.
    let e = st
        .put_part(KEY, BOGUS_UPLOAD_ID, 0, part(&data, 0))
        .expect_err("bogus id");
    match &e {
        PublishError::UploadGone { key, upload_id, .. } => {
            assert_eq!(key, KEY);
            assert_eq!(upload_id, BOGUS_UPLOAD_ID);
        }
        other => panic!("expected UploadGone, got {other:?}"),
    }
    assert!(!e.is_transient());
    assert!(e.to_string().contains("start a new upload"), "{e}");
    // An aborted upload: its parts are dropped, every later step is UploadGone.
    let id = st.create_multipart(KEY).expect("create");
    let tag = st.put_part(KEY, &id, 0, part(&data, 0)).expect("part");
    st.abort_multipart(KEY, &id).expect("abort");
    assert_eq!(stored_parts(&s3, &id), 0);
    let e = st
        .put_part(KEY, &id, 1, part(&data, 1))
        .expect_err("after abort");
    assert!(matches!(e, PublishError::UploadGone { .. }), "{e:?}");
    let e = st
        .complete_multipart(KEY, &id, &[tag])
        .expect_err("complete after abort");
    assert!(matches!(e, PublishError::UploadGone { .. }), "{e:?}");
    let e = st.abort_multipart(KEY, &id).expect_err("abort twice");
    assert!(matches!(e, PublishError::UploadGone { .. }), "{e:?}");
    assert_eq!(st.head_size(KEY).expect("head"), None);
    // The probe that told UploadGone from Forbidden left no upload behind.
    let uploads = std::fs::read_dir(s3.store_root())
        .expect("store root")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".upload-"))
        .count();
    assert_eq!(uploads, 0, "an upload left open in the store");
    // Completing with no ETag is refused before any request.
    let e = st.complete_multipart(KEY, &id, &[]).expect_err("no parts");
    assert!(matches!(e, PublishError::InvalidConfig { .. }), "{e:?}");
}

/// s3s-fs keeps an upload in progress (its id file and its parts) in its root directory:
/// after a restart on the same directory the upload resumes and completes.
#[test]
fn publish_multipart_upload_survives_a_restart_of_the_server() {
    let mut s3 = S3Server::start();
    let data = payload();
    let (upload_id, mut e_tags) = {
        let st = store(s3.endpoint());
        let id = st.create_multipart(KEY).expect("create");
        let tags: Vec<String> = (0..2)
            .map(|i| st.put_part(KEY, &id, i, part(&data, i)).expect("part"))
            .collect();
        (id, tags)
    };
    s3.restart();
    let st = store(s3.endpoint());
    e_tags.push(
        st.put_part(KEY, &upload_id, 2, part(&data, 2))
            .expect("part after restart"),
    );
    st.complete_multipart(KEY, &upload_id, &e_tags)
        .expect("complete after restart");
    let (sha, size) = st.hash_remote(KEY).expect("hash");
    assert_eq!((sha, size), (sha256_hex(&data), data.len() as u64));
}

#[test]
fn publish_multipart_server_down_is_transient() {
    let mut s3 = S3Server::start();
    let st = store(s3.endpoint());
    let data = payload();
    let id = st.create_multipart(KEY).expect("create");
    s3.stop();
    let e = st
        .put_part(KEY, &id, 0, part(&data, 0))
        .expect_err("server down");
    assert!(
        matches!(e, PublishError::EndpointUnreachable { .. }),
        "{e:?}"
    );
    assert!(e.is_transient());
}

/// s3s-fs keeps the access key that started an upload and answers `AccessDenied` to any
/// other key: an upload id this client cannot use is `UploadGone` for it (start a new
/// one), not `Forbidden` (the same key may start uploads at that key).
#[test]
fn publish_multipart_upload_of_another_access_key_is_upload_gone() {
    let s3 = S3Server::start();
    let st = store(s3.endpoint());
    // An upload started by another tenant, as s3s-fs records it.
    std::fs::write(
        s3.store_root()
            .join(format!(".upload-{BOGUS_UPLOAD_ID}.json")),
        b"\"another-access-key\"",
    )
    .expect("upload record");
    let data = payload();
    let e = st
        .put_part(KEY, BOGUS_UPLOAD_ID, 0, part(&data, 0))
        .expect_err("another key's upload");
    assert!(matches!(e, PublishError::UploadGone { .. }), "{e:?}");
    assert!(e.to_string().contains(BOGUS_UPLOAD_ID), "{e}");
    assert_eq!(stored_parts(&s3, BOGUS_UPLOAD_ID), 0);
}
