//! `remote-read`: the cost of reading one block of a published shard remotely (issue 15:
//! "Remote read of one block from a 1,000-block episode: requests made and bytes fetched vs
//! the block's size; goal <= 3 requests, <= block + 64 KiB").
//!
//! It writes a shard of `--blocks` blocks of `--block-kib` KiB (incompressible bytes),
//! starts a real s3s-fs on loopback (`--s3s-fs`, else `$WSHARD_S3S_FS`), puts the shard on
//! it as a content-addressed blob, then opens it with `wshard_publish::remote::RemoteShard`
//! (no cache) and reads one block (first, middle, last: each from a fresh open), counting
//! the store's requests and bytes (`Store::read_stats`). A last row reads the block again
//! once the cache holds the blob: 0 requests. Counts, not times: one run is the result.

use std::path::PathBuf;

use wshard::digest::sha256_hex;
use wshard::entry::content_type;
use wshard::read::DEFAULT_PREFETCH_BYTES;
use wshard::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};
use wshard_publish::cache::BlobCache;
use wshard_publish::remote::{BlobRef, RemoteShard};
use wshard_publish::store::PutCondition;
use wshard_publish::{Credentials, Store, StoreConfig, TransferOptions};

use crate::error::{fail, Result};
use crate::s3s_fs::{self, S3sFs, ACCESS_KEY, BUCKET, SECRET_KEY};
use crate::scratch::ScratchDir;

/// The goal: requests per one-block read.
const GOAL_REQUESTS: u64 = 3;
/// The goal: bytes beyond the block.
const GOAL_OVERHEAD: u64 = DEFAULT_PREFETCH_BYTES;

pub const USAGE: &str = "\
usage: wshard-bench remote-read [--blocks N] [--block-kib N] [--s3s-fs PATH] [--quick]

  --blocks N      blocks in the shard (default 1000)
  --block-kib N   KiB per block (default 64)
  --s3s-fs PATH   the s3s-fs 0.14.1 binary (default $WSHARD_S3S_FS)
  --quick         smoke run: 1000 blocks of 1 KiB";

/// The options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteReadArgs {
    pub blocks: usize,
    pub block_kib: usize,
    pub s3s_fs: Option<PathBuf>,
}

impl Default for RemoteReadArgs {
    fn default() -> Self {
        Self {
            blocks: 1000,
            block_kib: 64,
            s3s_fs: None,
        }
    }
}

/// Parse `remote-read`'s options; `None` for `--help`.
pub fn parse(mut it: impl Iterator<Item = String>) -> Result<Option<RemoteReadArgs>> {
    let mut a = RemoteReadArgs::default();
    while let Some(arg) = it.next() {
        let mut value = |k: &str| {
            it.next()
                .ok_or_else(|| fail(format!("{k} needs a value\n\n{USAGE}")))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--quick" => {
                a.blocks = 1000;
                a.block_kib = 1;
            }
            "--blocks" => {
                a.blocks = value(&arg)?
                    .parse()
                    .map_err(|e| fail(format!("--blocks: {e}")))?;
            }
            "--block-kib" => {
                a.block_kib = value(&arg)?
                    .parse()
                    .map_err(|e| fail(format!("--block-kib: {e}")))?;
            }
            "--s3s-fs" => a.s3s_fs = Some(PathBuf::from(value(&arg)?)),
            other => return Err(fail(format!("unknown option `{other}`\n\n{USAGE}"))),
        }
    }
    if a.blocks == 0 || a.block_kib == 0 {
        return Err(fail("--blocks and --block-kib must be positive"));
    }
    Ok(Some(a))
}

fn shard(blocks: usize, block_len: usize) -> Result<Vec<u8>> {
    let names: Vec<String> = (0..blocks).map(|i| format!("obs/{i:04}")).collect();
    let mut w = ShardWriter::new(
        std::io::Cursor::new(Vec::new()),
        ShardOptions::wshard(),
        &Reserve::names(names.clone()),
    )?;
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    for name in &names {
        let data: Vec<u8> = (0..block_len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[0]
            })
            .collect();
        w.write_block(name, &data, BlockOptions::raw(content_type::UNKNOWN))?;
    }
    Ok(w.finish()?.0.into_inner())
}

/// Run it and print the table.
pub fn run(args: &RemoteReadArgs) -> Result<()> {
    let bin = s3s_fs::binary(args.s3s_fs.as_deref())?;
    let block_len = args.block_kib * 1024;
    let bytes = shard(args.blocks, block_len)?;
    let scratch = ScratchDir::new(None)?;
    let server = S3sFs::start(&bin, &scratch.file("store"))?;
    let cfg = StoreConfig {
        provider: wshard_publish::Provider::S3,
        endpoint: server.endpoint().to_owned(),
        bucket: BUCKET.into(),
        prefix: String::new(),
        region: "us-east-1".into(),
        allow_http: true,
    };
    let store = Store::new(
        cfg,
        &Credentials::new(ACCESS_KEY, SECRET_KEY),
        TransferOptions::default(),
    )?;
    let sha = sha256_hex(&bytes);
    let key = format!("blobs/sha256/{}/{sha}", &sha[..2]);
    store.put(&key, bytes.clone().into(), PutCondition::Always)?;
    let blob = BlobRef::key(&key);
    println!(
        "remote-read: one block of a {}-block shard ({} B, blocks of {block_len} B) on s3s-fs at {}",
        args.blocks,
        bytes.len(),
        server.endpoint
    );
    println!(
        "{:<22} {:>8} {:>12} {:>10} {:>10} {:>6}",
        "read", "requests", "bytes", "block", "overhead", "goal"
    );
    let last = args.blocks - 1;
    let cache = BlobCache::at(scratch.file("cache"));
    let mut all_ok = true;
    let cases: [(&str, usize, bool); 4] = [
        ("first block", 0, false),
        ("middle block", args.blocks / 2, false),
        ("last block", last, false),
        ("cached blob, again", args.blocks / 2, true),
    ];
    for (label, i, cached) in cases {
        if cached {
            cache.fetch(&store, &key, &sha, Some(bytes.len() as u64))?;
        }
        let name = format!("obs/{i:04}");
        let before = store.read_stats();
        let shard = RemoteShard::open(&store, cached.then_some(&cache), &blob)?;
        let got = shard.read_block(&name)?;
        let s = store.read_stats().since(before);
        if got.len() != block_len {
            return Err(fail(format!(
                "{name}: {} bytes, expected {block_len}",
                got.len()
            )));
        }
        let overhead = s.bytes.saturating_sub(block_len as u64);
        let ok = s.requests <= GOAL_REQUESTS && s.bytes <= block_len as u64 + GOAL_OVERHEAD;
        all_ok &= ok;
        println!(
            "{label:<22} {:>8} {:>12} {:>10} {:>10} {:>6}",
            s.requests,
            s.bytes,
            block_len,
            overhead,
            if ok { "met" } else { "MISSED" }
        );
    }
    println!(
        "goal: <= {GOAL_REQUESTS} requests and <= block + {GOAL_OVERHEAD} B per one-block read: {}",
        if all_ok { "met" } else { "MISSED" }
    );
    Ok(())
}
