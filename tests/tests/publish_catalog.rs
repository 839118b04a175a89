//! `publish_catalog_*`: the catalog table (Parquet, one row per episode stream) that
//! `publish` stores, read back with the parquet crate and compared with the episodes, and
//! `wshard query` (the real binary, DuckDB in place on a real s3s-fs).

use std::path::Path;
use std::process::{Command, Output};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use serde_json::Value;
use wshard::episode::Timebase;
use wshard::episode_dir::annotations::{Annotation, Annotations};
use wshard::episode_dir::events::EventData;
use wshard::episode_dir::EpisodeDir;
use wshard_e2e::bins;
use wshard_e2e::bins::output_text as text;
use wshard_e2e::fixtures::{copy_tree, datadir_v01};
use wshard_e2e::s3::{S3Server, ACCESS_KEY, BUCKET, SECRET_KEY};
use wshard_e2e::{Daemon, DaemonOptions};
use wshard_publish::publish::BlobAction;
use wshard_publish::{Credentials, DatasetId, Publisher, Store, StoreConfig, TransferOptions};

fn publisher(s3: &S3Server) -> Publisher {
    let cfg = StoreConfig {
        provider: wshard_publish::Provider::S3,
        endpoint: s3.endpoint().to_owned(),
        bucket: BUCKET.to_owned(),
        prefix: String::new(),
        region: "us-east-1".into(),
        allow_http: true,
    };
    let store = Store::new(
        cfg,
        &Credentials::new(ACCESS_KEY, SECRET_KEY),
        TransferOptions::default(),
    )
    .expect("store");
    Publisher::new(store)
}

fn ds() -> DatasetId {
    DatasetId::parse("lab/pick").expect("dataset")
}

fn rows(path: &Path) -> Vec<Row> {
    let file = std::fs::File::open(path).expect("catalog in the store");
    let reader = SerializedFileReader::new(file).expect("parquet");
    reader
        .get_row_iter(None)
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect()
}

/// A row as `name -> field`.
fn get<'a>(row: &'a Row, name: &str) -> &'a Field {
    row.get_column_iter()
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("no column {name}"))
}

fn s(row: &Row, name: &str) -> String {
    match get(row, name) {
        Field::Str(v) => v.clone(),
        Field::Null => "<null>".into(),
        other => panic!("{name}: {other:?}"),
    }
}

fn i(row: &Row, name: &str) -> Option<i64> {
    match get(row, name) {
        Field::Long(v) => Some(*v),
        Field::Null => None,
        other => panic!("{name}: {other:?}"),
    }
}

fn f(row: &Row, name: &str) -> Option<f64> {
    match get(row, name) {
        Field::Double(v) => Some(*v),
        Field::Null => None,
        other => panic!("{name}: {other:?}"),
    }
}

fn list(row: &Row, name: &str) -> Vec<String> {
    match get(row, name) {
        Field::ListInternal(l) => l
            .elements()
            .iter()
            .map(|e| match e {
                Field::Str(v) => v.clone(),
                other => panic!("{name}: {other:?}"),
            })
            .collect(),
        other => panic!("{name}: {other:?}"),
    }
}

fn annotate(dir: &Path, labels: &[&str]) {
    let ep = EpisodeDir::open(dir).expect("episode");
    let mut a = Annotations::new(ep.episode_id());
    for (n, label) in labels.iter().enumerate() {
        a.annotations.push(Annotation {
            seq: n as u64,
            t_ns: 0,
            label: (*label).to_owned(),
            data: EventData::Text(String::new()),
            author: "e2e".into(),
            created_unix_ns: 1,
        });
    }
    let name = wshard::episode_dir::names::annotations_file_name(ep.episode_id());
    std::fs::write(dir.join(name), a.to_json_bytes()).expect("annotations");
}

#[test]
fn publish_catalog_rows_equal_the_episodes_and_republish_sends_nothing() {
    let s3 = S3Server::start();
    let data = tempfile::tempdir_in("/tmp").expect("tempdir");
    copy_tree(&datadir_v01(), data.path());
    annotate(&data.path().join("legacy-complete"), &["success", "grasp"]);
    let p = publisher(&s3);
    let r = p.publish(data.path(), &ds(), &[]).expect("publish");
    let v = &r.prepared;
    // The catalog is a blob named in the hashed manifest, and is also at its version key.
    let cat = &v.catalog;
    assert_eq!(cat.action, BlobAction::Uploaded { multipart: false });
    let m = v.version.catalog.as_ref().expect("catalog in the manifest");
    assert_eq!((&m.sha256, m.size), (&cat.sha256, cat.size));
    assert_eq!(
        v.catalog_key,
        format!("datasets/lab/pick/catalog/{}.parquet", v.version_hash)
    );
    let blob = std::fs::read(s3.object_path(&cat.key)).expect("catalog blob");
    assert_eq!(
        std::fs::read(s3.object_path(&v.catalog_key)).expect("catalog key"),
        blob
    );
    assert_eq!(wshard::digest::sha256_hex(&blob), cat.sha256);

    let got = rows(&s3.object_path(&v.catalog_key));
    assert_eq!(
        got.len(),
        1,
        "one row: the one finished single-stream episode"
    );
    let row = &got[0];
    let ep = EpisodeDir::open(data.path().join("legacy-complete")).expect("episode");
    let st = &ep.streams()[0];
    assert_eq!(s(row, "dataset"), "lab/pick");
    assert_eq!(s(row, "episode"), "legacy-complete");
    assert_eq!(s(row, "episode_id"), ep.episode_id());
    assert_eq!(s(row, "stream"), "main");
    assert_eq!(s(row, "status"), "complete");
    assert_eq!(s(row, "robot"), "<null>");
    assert_eq!(i(row, "steps"), Some(st.steps as i64));
    assert!(st.steps > 0);
    assert_eq!(
        list(row, "channels"),
        st.channels
            .iter()
            .map(|c| c.name.clone())
            .collect::<Vec<_>>()
    );
    let (clock, hz) = match st.timebase {
        Some(Timebase::Ticks { tick_hz }) => ("ticks", Some(tick_hz)),
        Some(Timebase::TimestampsNs { dt_ns }) => ("timestamps_ns", Some(1e9 / dt_ns as f64)),
        None => ("<null>", None),
    };
    assert_eq!(s(row, "clock"), clock);
    assert_eq!(f(row, "tick_hz"), hz);
    assert_eq!(i(row, "start_ns"), st.first_t_ns);
    assert_eq!(i(row, "end_ns"), st.last_t_ns);
    assert!(f(row, "duration_s").is_some());
    assert_eq!(list(row, "labels"), ["grasp", "success"]);
    assert_eq!(list(row, "tags"), Vec::<String>::new());
    // Blobs and bytes: every file of the episode, as the manifest lists them.
    let files = &v.version.episodes["legacy-complete"].files;
    assert_eq!(
        list(row, "blobs"),
        files.values().map(|f| f.sha256.clone()).collect::<Vec<_>>()
    );
    assert_eq!(
        i(row, "bytes"),
        Some(files.values().map(|f| f.size as i64).sum())
    );

    // Again: the same catalog bytes, nothing sent.
    let again = p.publish(data.path(), &ds(), &[]).expect("republish");
    assert_eq!(again.bytes_sent(), 0);
    assert_eq!(again.prepared.catalog.action, BlobAction::AlreadyStored);
    assert_eq!(again.prepared.catalog.sha256, cat.sha256);
    assert_eq!(again.prepared.version_hash, v.version_hash);
}

#[test]
fn publish_catalog_bad_annotations_stop_the_run_before_anything_is_sent() {
    let s3 = S3Server::start();
    let data = tempfile::tempdir_in("/tmp").expect("tempdir");
    let ep = data.path().join("ep");
    copy_tree(&datadir_v01().join("legacy-complete"), &ep);
    let name = wshard::episode_dir::names::annotations_file_name("legacy-complete");
    std::fs::write(ep.join(&name), b"{not json").expect("annotations");
    // Scanning the directory leaves it out (not an episode that reads); named, it is a
    // typed error naming the episode and the file.
    let e = publisher(&s3)
        .publish(data.path(), &ds(), &[])
        .expect_err("bad annotations");
    assert!(
        matches!(e, wshard_publish::PublishError::NothingToPublish { .. }),
        "{e}"
    );
    let e = publisher(&s3)
        .publish(data.path(), &ds(), &["ep".into()])
        .expect_err("bad annotations");
    let text = e.to_string();
    assert!(text.contains("ep") && text.contains(&name), "{text}");
    assert!(
        !s3.object_path("blobs").exists(),
        "a blob was sent before the catalog failed"
    );
}

#[test]
fn publish_catalog_multistream_episode_gives_one_row_per_stream() {
    use wshard_e2e::data;
    use wshard_e2e::multi::{connect_v2, episode_close, producer, stream_spec};
    use wshard_ingest_proto::{AcceptedWhat, Durability, EpisodeOpen, Frame, Outcome};

    let s3 = S3Server::start();
    let d = Daemon::start(DaemonOptions::default());
    let mut o = connect_v2(&d.socket());
    o.send(&Frame::EpisodeOpen(
        EpisodeOpen::new("multi-ep", data::ENV_ID)
            .with_metadata_json(r#"{"robot":"franka-7","host":"rig-2","tags":["pick","night"]}"#),
    ));
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

    let r = publisher(&s3)
        .publish(&d.data_dir(), &ds(), &["multi-ep".into()])
        .expect("publish");
    let got = rows(&s3.object_path(&r.prepared.catalog_key));
    let ep = EpisodeDir::open(d.data_dir().join("multi-ep")).expect("episode");
    assert_eq!(got.len(), 2, "one row per stream");
    let files = &r.prepared.version.episodes["multi-ep"].files;
    for st in ep.streams() {
        let row = got
            .iter()
            .find(|row| s(row, "stream") == st.name)
            .unwrap_or_else(|| panic!("no row for stream {}", st.name));
        assert_eq!(s(row, "episode"), "multi-ep");
        assert_eq!(s(row, "env_id"), data::ENV_ID);
        assert_eq!(s(row, "robot"), "franka-7");
        assert_eq!(s(row, "host"), "rig-2");
        assert_eq!(list(row, "tags"), ["pick", "night"]);
        assert_eq!(i(row, "steps"), Some(st.steps as i64));
        assert_eq!(
            list(row, "channels"),
            st.channels
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
        );
        let under = format!("streams/{}/", st.name);
        let mine: Vec<_> = files
            .iter()
            .filter(|(k, _)| k.starts_with(&under))
            .collect();
        assert!(!mine.is_empty());
        assert_eq!(
            list(row, "blobs"),
            mine.iter()
                .map(|(_, f)| f.sha256.clone())
                .collect::<Vec<_>>()
        );
        assert_eq!(
            i(row, "bytes"),
            Some(mine.iter().map(|(_, f)| f.size as i64).sum())
        );
    }
    let steps: Vec<_> = got.iter().map(|r| i(r, "steps")).collect();
    assert!(
        steps.contains(&Some(20)) && steps.contains(&Some(4)),
        "{steps:?}"
    );
}

fn wshard(args: &[&str], s3: &S3Server, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bins::wshard());
    cmd.args(args).args([
        "--endpoint",
        s3.endpoint(),
        "--bucket",
        BUCKET,
        "--allow-http",
    ]);
    for v in [
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "WSHARD_S3_ENDPOINT",
        "WSHARD_S3_BUCKET",
        "WSHARD_S3_PREFIX",
        "WSHARD_PYTHON",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run wshard")
}

#[test]
fn publish_catalog_query_cli_answers_from_the_store_without_the_secret() {
    let s3 = S3Server::start();
    let mut outputs = Vec::new();
    // No catalog yet: a clear error.
    let none = wshard(&["query", "select * from catalog"], &s3, &[]);
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
    assert!(text(&none).contains("no catalog found"), "{}", text(&none));
    outputs.push(none);

    let data = tempfile::tempdir_in("/tmp").expect("tempdir");
    for n in ["ep-b", "ep-a"] {
        copy_tree(&datadir_v01().join("legacy-complete"), &data.path().join(n));
    }
    let dir = data.path().to_string_lossy().into_owned();
    for ds in ["lab/pick", "lab/place"] {
        let p = wshard(&["publish", "--dataset", ds, "--data-dir", &dir], &s3, &[]);
        assert_eq!(p.status.code(), Some(0), "{}", text(&p));
        outputs.push(p);
    }
    let sql = "select episode, stream, steps from catalog order by 1,2";
    let q = wshard(&["query", sql, "--dataset", "lab/pick", "--json"], &s3, &[]);
    assert_eq!(q.status.code(), Some(0), "{}", text(&q));
    let got: Vec<Value> = String::from_utf8_lossy(&q.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json row"))
        .collect();
    let ep = EpisodeDir::open(data.path().join("ep-a")).expect("episode");
    let steps = ep.streams()[0].steps;
    assert_eq!(
        got,
        [
            serde_json::json!({"episode": "ep-a", "stream": "main", "steps": steps}),
            serde_json::json!({"episode": "ep-b", "stream": "main", "steps": steps}),
        ]
    );
    outputs.push(q);
    // Every dataset (the default), as a table; the version column comes from the key.
    let all = wshard(
        &[
            "query",
            "select dataset, count(*) as n, min(length(version)) as v from catalog group by 1 order by 1",
        ],
        &s3,
        &[],
    );
    assert_eq!(all.status.code(), Some(0), "{}", text(&all));
    let t = String::from_utf8_lossy(&all.stdout).into_owned();
    assert!(t.contains("lab/pick   2  64"), "{t}");
    assert!(t.contains("lab/place  2  64"), "{t}");
    outputs.push(all);
    // A SQL error is DuckDB's message, exit 1.
    let bad = wshard(&["query", "select nope from catalog"], &s3, &[]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    assert!(text(&bad).contains("SQL error"), "{}", text(&bad));
    assert!(text(&bad).contains("nope"), "{}", text(&bad));
    outputs.push(bad);
    // No python: exit 2 with the install hint.
    let nopy = wshard(
        &["query", sql],
        &s3,
        &[("WSHARD_PYTHON", "/nonexistent/python3")],
    );
    assert_eq!(nopy.status.code(), Some(2), "{}", text(&nopy));
    assert!(
        text(&nopy).contains("pip install duckdb"),
        "{}",
        text(&nopy)
    );
    outputs.push(nopy);
    // A python without duckdb (site-packages off): exit 2 with the hint too.
    let wrapper = data.path().join("python-no-site");
    std::fs::write(&wrapper, "#!/bin/sh\nexec python3 -S \"$@\"\n").expect("wrapper");
    let mut perm = std::fs::metadata(&wrapper).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&wrapper, perm).expect("chmod");
    let w = wrapper.to_string_lossy().into_owned();
    let nodb = wshard(&["query", sql], &s3, &[("WSHARD_PYTHON", &w)]);
    assert_eq!(nodb.status.code(), Some(2), "{}", text(&nodb));
    assert!(text(&nodb).contains("duckdb is missing"), "{}", text(&nodb));
    assert!(
        text(&nodb).contains("pip install duckdb==1.5.5"),
        "{}",
        text(&nodb)
    );
    outputs.push(nodb);

    for out in &outputs {
        let t = text(out);
        assert!(!t.contains(SECRET_KEY), "the secret in: {t}");
    }
}

#[test]
fn publish_catalog_single_stream_episode_has_the_producers_robot_host_and_tags() {
    use wshard_client::{Durability, Outcome};
    use wshard_e2e::data;

    let s3 = S3Server::start();
    let d = Daemon::start(DaemonOptions::default());
    let ch = data::channels();
    let mut client = d.client("catalog/single");
    let spec = data::open_spec("single-ep", &ch, Durability::Ack)
        .with_metadata_json(r#"{"robot":"ur5-3","host":"rig-9","tags":["pick","day"]}"#);
    let mut w = client.open_episode(spec).expect("open");
    data::push_steps(&mut w, &ch, 30).expect("push");
    w.close(Outcome::Completed).expect("close");

    let r = publisher(&s3)
        .publish(&d.data_dir(), &ds(), &["single-ep".into()])
        .expect("publish");
    let got = rows(&s3.object_path(&r.prepared.catalog_key));
    assert_eq!(got.len(), 1, "one row: stream main");
    let row = &got[0];
    assert_eq!(s(row, "stream"), "main");
    assert_eq!(s(row, "robot"), "ur5-3");
    assert_eq!(s(row, "host"), "rig-9");
    assert_eq!(list(row, "tags"), ["pick", "day"]);

    // So `where robot = ...` finds it.
    let q = wshard(
        &[
            "query",
            "select episode, stream from catalog where robot = 'ur5-3' and host = 'rig-9'",
            "--json",
        ],
        &s3,
        &[],
    );
    assert_eq!(q.status.code(), Some(0), "{}", text(&q));
    let found: Vec<Value> = String::from_utf8_lossy(&q.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json row"))
        .collect();
    assert_eq!(
        found,
        [serde_json::json!({"episode": "single-ep", "stream": "main"})]
    );
}
