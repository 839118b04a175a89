//! Helpers of the remote-read tests (`publish_remote_*`, `publish_cache_*`,
//! `publish_dataset_*`): a publisher on the test server, shards of many blocks put on it as
//! blobs, a multi-stream episode recorded by the real wshardd, the `wshard` CLI with the
//! store's variables, and block-by-block comparison of a remote shard with a local file.

use std::path::Path;
use std::process::{Command, Output};

use wshard::entry::content_type;
use wshard::read::ShardReader;
use wshard::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};
use wshard_publish::hash::sha256_hex;
use wshard_publish::remote::RemoteShard;
use wshard_publish::store::PutCondition;
use wshard_publish::{Credentials, DatasetId, Publisher, Store, StoreConfig, TransferOptions};

use crate::rng::Rng;
use crate::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY};
use crate::{bins, Daemon, DaemonOptions};

/// A publisher on `s3`'s bucket with short timeouts.
#[must_use]
pub fn publisher(s3: &S3Server) -> Publisher {
    let cfg = StoreConfig {
        provider: wshard_publish::Provider::S3,
        endpoint: s3.endpoint().to_owned(),
        bucket: BUCKET.to_owned(),
        prefix: String::new(),
        region: "us-east-1".into(),
        allow_http: true,
    };
    let opts = TransferOptions {
        max_retries: 1,
        connect_timeout: std::time::Duration::from_secs(2),
        retry_timeout: std::time::Duration::from_secs(5),
        ..TransferOptions::default()
    };
    let store = Store::new(cfg, &Credentials::new(ACCESS_KEY, SECRET_KEY), opts).expect("store");
    Publisher::new(store)
}

/// `lab/pick`.
#[must_use]
pub fn ds() -> DatasetId {
    DatasetId::parse("lab/pick").expect("dataset")
}

/// A shard of `blocks` raw blocks `b/0000`... of `block_len` pseudo-random bytes each.
#[must_use]
pub fn shard_of_blocks(blocks: usize, block_len: usize) -> Vec<u8> {
    let names: Vec<String> = (0..blocks).map(|i| format!("b/{i:04}")).collect();
    let mut w = ShardWriter::new(
        std::io::Cursor::new(Vec::new()),
        ShardOptions::wshard(),
        &Reserve::names(names.clone()),
    )
    .expect("writer");
    let mut rng = Rng::new(blocks as u64);
    for name in &names {
        let data = rng.bytes(block_len);
        w.write_block(name, &data, BlockOptions::raw(content_type::UNKNOWN))
            .expect("block");
    }
    w.finish().expect("finish").0.into_inner()
}

/// Put `bytes` on the store as a blob; its key and SHA-256.
#[must_use]
pub fn put_blob(p: &Publisher, bytes: &[u8]) -> (String, String) {
    let sha = sha256_hex(bytes);
    let key = p.keys().blob(&sha);
    p.store()
        .put(&key, bytes.to_vec().into(), PutCondition::Always)
        .expect("put blob");
    (key, sha)
}

/// Every block of `remote` equals the same block of the local shard `local`.
pub fn assert_same_blocks(remote: &RemoteShard<'_>, local: &Path) {
    let l = ShardReader::open(local).expect("local shard");
    let names: Vec<&str> = l.index().names().collect();
    let rnames: Vec<&str> = remote.reader().index().names().collect();
    assert_eq!(rnames, names, "{}", local.display());
    for name in names {
        assert_eq!(
            remote.read_block(name).expect("remote block"),
            l.read_block(name).expect("local block"),
            "{} block {name}",
            local.display()
        );
    }
}

/// A finished multi-stream episode `multi-ep` (streams `joints` and `imu`) recorded by the
/// real wshardd; the daemon holds its data directory.
#[must_use]
pub fn multistream_episode() -> Daemon {
    use crate::data;
    use crate::multi::{connect_v2, episode_close, producer, stream_spec};
    use wshard_ingest_proto::{AcceptedWhat, Durability, EpisodeOpen, Frame, Outcome};

    let d = Daemon::start(DaemonOptions::default());
    let mut o = connect_v2(&d.socket());
    o.send(&Frame::EpisodeOpen(EpisodeOpen::new(
        "multi-ep",
        data::ENV_ID,
    )));
    assert_eq!(o.expect_accepted(AcceptedWhat::EpisodeOpen), 0);
    let joints = stream_spec(
        "multi-ep",
        "joints",
        &data::channels(),
        1000.0,
        Durability::Ack,
    );
    let imu = stream_spec(
        "multi-ep",
        "imu",
        &data::small_channels(),
        200.0,
        Durability::Ack,
    );
    let mut a = producer(&d.socket(), &joints);
    let mut b = producer(&d.socket(), &imu);
    a.timesteps(&data::channels(), 0..20);
    b.timesteps(&data::small_channels(), 0..4);
    a.flush_until(20);
    b.flush_until(4);
    a.close(Outcome::Completed, 20);
    b.close(Outcome::Completed, 4);
    assert_eq!(episode_close(&mut o), 0);
    d
}

/// Run `wshard ARGS` with the store's endpoint and credentials in the environment (as an
/// operator would), the cache at `cache`.
#[must_use]
pub fn wshard(s3: &S3Server, cache: &Path, args: &[&str]) -> Output {
    wshard_env(s3, cache, args, &[])
}

/// [`wshard()`] with more (or overriding) environment variables.
#[must_use]
pub fn wshard_env(s3: &S3Server, cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bins::wshard());
    cmd.args(args);
    for v in [
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "WSHARD_S3_PREFIX",
        "XDG_CACHE_HOME",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .env("WSHARD_S3_ENDPOINT", s3.endpoint())
        .env("WSHARD_S3_BUCKET", BUCKET)
        .env("WSHARD_S3_ALLOW_HTTP", "1")
        .env("WSHARD_CACHE_DIR", cache);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run wshard")
}

/// stdout and stderr of a run, for messages.
#[must_use]
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
