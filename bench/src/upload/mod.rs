//! `upload`: the upload throughput of `wshard publish` against a plain multipart put of the
//! same bytes with the same client to the same server (s3s-fs 0.14.1 on loopback), and the
//! bytes a re-publish sends (must be 0). See bench/README.md, "upload".
//!
//! Cases, each on its own key prefix (deleted from the server after the plain and upload
//! cases, untimed):
//! - `plain`: [`plain::Plain::put_all`]: object_store `put_multipart`, same part size.
//! - `upload`: `wshard_publish::BlobSender::put_file` per file (the put or multipart
//!   upload `publish` sends a blob with), nothing else: the upload phase alone.
//! - `publish`: `Publisher::publish` on an empty prefix: local SHA-256 of every file, HEAD,
//!   upload, verification (a streamed GET and SHA-256 of every blob sent), catalog,
//!   version manifest, latest.json.
//! - `hash (in publish)` and `verify (in publish)`: the local hashing (`episodes::select`)
//!   and the remote read-back (`Store::hash_remote` of every blob) timed on their own, the
//!   two parts of `publish` that `upload` does not have.
//! - `re-publish`: `Publisher::publish` again: bytes sent must be 0.

pub mod args;
mod data;
mod plain;
mod report;

use std::time::{Duration, Instant};

use wshard_publish::{
    BlobSender, Credentials, DatasetId, Publisher, Store, StoreConfig, TransferOptions,
};

use crate::error::{fail, Result};
use crate::s3s_fs::{self as server, S3sFs, ACCESS_KEY, BUCKET, SECRET_KEY};
use crate::scratch::ScratchDir;
use args::UploadArgs;
use report::Row;

const MB: u64 = 1_000_000;
const MIB: u64 = 1 << 20;

/// Wall time and CPU seconds (this process, the server) of `f`.
fn measured<T>(server: &S3sFs, f: impl FnOnce() -> Result<T>) -> Result<(T, Duration, f64, f64)> {
    let (c0, s0) = (server::self_cpu_s(), server.cpu_s());
    let t = Instant::now();
    let out = f()?;
    let wall = t.elapsed();
    Ok((out, wall, server::self_cpu_s() - c0, server.cpu_s() - s0))
}

fn store(endpoint: &str, prefix: &str, opts: &TransferOptions) -> Result<Store> {
    let cfg = StoreConfig {
        provider: wshard_publish::Provider::S3,
        endpoint: endpoint.to_owned(),
        bucket: BUCKET.to_owned(),
        prefix: prefix.to_owned(),
        region: "us-east-1".into(),
        allow_http: true,
    };
    Ok(Store::new(
        cfg,
        &Credentials::new(ACCESS_KEY, SECRET_KEY),
        opts.clone(),
    )?)
}

/// Run the benchmark and print its table and JSON lines.
///
/// # Errors
/// Setup failures, store errors, a re-publish that sent bytes.
pub fn run(a: &UploadArgs) -> Result<()> {
    let bin = server::binary(a.s3s_fs.as_deref())?;
    let scratch = ScratchDir::new(a.dir.as_deref())?;
    let data_dir = scratch.file("data");
    eprintln!(
        "upload: building {} MB of episodes in {}",
        a.total_mb,
        data_dir.display()
    );
    let files = data::build(
        &data_dir,
        a.total_mb * MB,
        a.episode_mb * MB,
        a.chunk_mib * MIB,
    )?;
    let bytes: u64 = files.iter().map(|f| f.size).sum();
    let server = S3sFs::start(&bin, &scratch.file("store"))?;
    let part = usize::try_from(a.part_mib * MIB).map_err(|_| fail("--part-mib too large"))?;
    let opts = TransferOptions {
        multipart_threshold: part as u64,
        part_size: part,
        ..TransferOptions::default()
    };
    let mut rows: Vec<Row> = Vec::new();
    let plain = plain::Plain::new(&server.endpoint, &opts)?;
    let up = store(&server.endpoint, "", &opts)?;
    for rep in 0..a.reps {
        // Alternate which goes first.
        let order: [&str; 2] = if rep % 2 == 0 {
            ["plain", "upload"]
        } else {
            ["upload", "plain"]
        };
        for case in order {
            let prefix = format!("{case}-{rep}/");
            eprintln!("upload: rep {} {case}", rep + 1);
            let (sent, wall, cpu, srv) = if case == "plain" {
                measured(&server, || plain.put_all(&prefix, &files))?
            } else {
                measured(&server, || {
                    for (i, f) in files.iter().enumerate() {
                        BlobSender::new(&up).put_file(
                            &format!("{prefix}{i:06}"),
                            &f.path,
                            f.size,
                        )?;
                    }
                    Ok(bytes)
                })?
            };
            rows.push(Row::new(case, bytes, sent, wall, cpu, srv));
            server.remove_prefix(&prefix);
        }
    }
    let ds = DatasetId::parse("bench/upload")?;
    let publisher = Publisher::new(store(&server.endpoint, "publish/", &opts)?);
    eprintln!("upload: publish");
    let (report, wall, cpu, srv) =
        measured(&server, || Ok(publisher.publish(&data_dir, &ds, &[])?))?;
    rows.push(Row::new(
        "publish",
        bytes,
        report.bytes_sent(),
        wall,
        cpu,
        srv,
    ));
    eprintln!("upload: hash (the local part of publish)");
    let (_, wall, cpu, srv) = measured(&server, || {
        Ok(wshard_publish::episodes::select(&data_dir, &[])?)
    })?;
    rows.push(Row::new("hash (in publish)", bytes, 0, wall, cpu, srv));
    eprintln!("upload: verify (the read-back part of publish)");
    let (_, wall, cpu, srv) = measured(&server, || {
        for f in &report.prepared.files {
            publisher.store().hash_remote(&f.key)?;
        }
        Ok(())
    })?;
    rows.push(Row::new("verify (in publish)", bytes, 0, wall, cpu, srv));
    eprintln!("upload: re-publish");
    let (again, wall, cpu, srv) =
        measured(&server, || Ok(publisher.publish(&data_dir, &ds, &[])?))?;
    rows.push(Row::new(
        "re-publish",
        bytes,
        again.bytes_sent(),
        wall,
        cpu,
        srv,
    ));
    report::print(a, &files, bytes, &rows, again.bytes_sent());
    if again.bytes_sent() != 0 {
        return Err(fail(format!(
            "re-publish sent {} bytes (must be 0)",
            again.bytes_sent()
        )));
    }
    Ok(())
}
