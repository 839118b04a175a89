#![allow(clippy::unwrap_used)]
//! Loading: precedence of `--config`, `$WSHARDD_CONFIG`, candidate files and defaults, and
//! the resolution of relative paths.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use wshardd_config::{Config, ConfigError, ConfigSource, LogLevel, DEFAULTS_ORIGIN};

/// Write a config file that sets `log.level` so the tests can tell files apart.
fn write(dir: &Path, name: &str, level: &str) -> PathBuf {
    let path = dir.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, format!("[log]\nlevel = \"{level}\"\n")).unwrap();
    path
}

#[test]
fn config_precedence_explicit_beats_everything() {
    let dir = tempfile::tempdir().unwrap();
    let explicit = write(dir.path(), "explicit.toml", "error");
    let env = write(dir.path(), "env.toml", "warn");
    let candidate = write(dir.path(), "candidate.toml", "debug");
    let (c, source) = Config::load_with(
        Some(&explicit),
        Some(env.clone().into()),
        std::slice::from_ref(&candidate),
    )
    .unwrap();
    assert_eq!(c.log.level, LogLevel::Error);
    assert_eq!(source, ConfigSource::Explicit(explicit.clone()));
    assert_eq!(source.path(), Some(explicit.as_path()));
}

#[test]
fn config_precedence_env_beats_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let env = write(dir.path(), "env.toml", "warn");
    let candidate = write(dir.path(), "candidate.toml", "debug");
    let (c, source) = Config::load_with(None, Some(env.clone().into()), &[candidate]).unwrap();
    assert_eq!(c.log.level, LogLevel::Warn);
    assert_eq!(source, ConfigSource::Env(env));
}

#[test]
fn config_precedence_empty_env_is_unset() {
    let dir = tempfile::tempdir().unwrap();
    let candidate = write(dir.path(), "candidate.toml", "debug");
    let (c, source) = Config::load_with(
        None,
        Some(OsString::new()),
        std::slice::from_ref(&candidate),
    )
    .unwrap();
    assert_eq!(c.log.level, LogLevel::Debug);
    assert_eq!(source, ConfigSource::Found(candidate));
}

#[test]
fn config_precedence_first_existing_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("etc/wshardd/wshardd.toml");
    let second = write(dir.path(), "cwd/wshardd.toml", "trace");
    let third = write(dir.path(), "third.toml", "error");
    let (c, source) = Config::load_with(None, None, &[missing, second.clone(), third]).unwrap();
    assert_eq!(c.log.level, LogLevel::Trace);
    assert_eq!(source, ConfigSource::Found(second));

    // Both exist: the first wins.
    let first = write(dir.path(), "etc/wshardd/wshardd.toml", "warn");
    let (c, source) = Config::load_with(
        None,
        None,
        &[first.clone(), dir.path().join("cwd/wshardd.toml")],
    )
    .unwrap();
    assert_eq!(c.log.level, LogLevel::Warn);
    assert_eq!(source, ConfigSource::Found(first));
}

#[test]
fn config_precedence_defaults_when_nothing_exists() {
    let dir = tempfile::tempdir().unwrap();
    let (c, source) = Config::load_with(None, None, &[dir.path().join("nope.toml")]).unwrap();
    assert_eq!(source, ConfigSource::Defaults);
    assert_eq!(source.path(), None);
    assert_eq!(source.to_string(), DEFAULTS_ORIGIN);
    assert_eq!(c.log, Config::default().log);
}

#[test]
fn config_missing_explicit_file_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let candidate = write(dir.path(), "candidate.toml", "debug");
    let e = Config::load_with(Some(&missing), None, &[candidate]).unwrap_err();
    match &e {
        ConfigError::Io { path, source } => {
            assert_eq!(path, &missing);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected Io, got {other:?}"),
    }
    assert!(
        e.to_string().contains(&missing.display().to_string()),
        "{e}"
    );
}

#[test]
fn config_missing_env_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let e = Config::load_with(None, Some(missing.clone().into()), &[]).unwrap_err();
    assert!(
        matches!(&e, ConfigError::Io { path, .. } if path == &missing),
        "{e:?}"
    );
}

#[test]
fn config_bad_candidate_is_an_error_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    fs::write(&bad, "[fsync]\ninterval_ms = 0\n").unwrap();
    let e = Config::load_with(None, None, std::slice::from_ref(&bad)).unwrap_err();
    assert_eq!(e.key(), Some("fsync.interval_ms"));
    assert!(
        e.to_string()
            .starts_with(&format!("config {}: ", bad.display())),
        "{e}"
    );
}

#[test]
fn config_relative_paths_resolve_against_the_file_directory() {
    let dir = tempfile::tempdir().unwrap();
    let conf_dir = dir.path().join("etc/wshardd");
    fs::create_dir_all(&conf_dir).unwrap();
    let file = conf_dir.join("wshardd.toml");
    fs::write(
        &file,
        "data_dir = \"data\"\n[socket]\npath = \"../run/wshardd.sock\"\n",
    )
    .unwrap();
    let (c, _) = Config::load_with(Some(&file), None, &[]).unwrap();
    assert_eq!(c.data_dir, conf_dir.join("data"));
    assert_eq!(c.socket.path, conf_dir.join("../run/wshardd.sock"));
    assert_eq!(c.quarantine_dir(), conf_dir.join("data/quarantine"));

    // Defaults in a file are resolved the same way.
    let empty = conf_dir.join("empty.toml");
    fs::write(&empty, "").unwrap();
    let c = Config::from_file(&empty).unwrap();
    assert_eq!(c.data_dir, conf_dir.join("wshard-data"));
    assert_eq!(c.socket.path, conf_dir.join("wshardd.sock"));
}

#[test]
fn config_absolute_paths_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("elsewhere/data");
    let file = dir.path().join("conf/w.toml");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(
        &file,
        format!(
            "data_dir = {:?}\n[socket]\npath = \"/run/wshardd.sock\"\n",
            data.display().to_string()
        ),
    )
    .unwrap();
    let c = Config::from_file(&file).unwrap();
    assert_eq!(c.data_dir, data);
    assert_eq!(c.socket.path, PathBuf::from("/run/wshardd.sock"));
}

#[test]
fn config_defaults_resolve_against_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (c, source) = Config::load_with(None, None, &[dir.path().join("none.toml")]).unwrap();
    assert_eq!(source, ConfigSource::Defaults);
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(c.data_dir, cwd.join("wshard-data"));
    assert_eq!(c.socket.path, cwd.join("wshardd.sock"));
}

#[test]
fn config_from_toml_str_keeps_relative_paths() {
    let c = Config::from_toml_str("data_dir = \"d\"\n", "t").unwrap();
    assert_eq!(c.data_dir, PathBuf::from("d"));
    let mut c = c;
    c.resolve_relative_paths(Path::new("/base"));
    assert_eq!(c.data_dir, PathBuf::from("/base/d"));
    assert_eq!(c.socket.path, PathBuf::from("/base/wshardd.sock"));
}

#[test]
fn config_resolved_socket_path_too_long() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.toml");
    let long = "s".repeat(120);
    fs::write(&file, format!("[socket]\npath = \"{long}.sock\"\n")).unwrap();
    let e = Config::from_file(&file).unwrap_err();
    assert_eq!(e.key(), Some("socket.path"));
    assert!(e.to_string().contains("at most 107"), "{e}");
}

#[test]
fn config_source_display() {
    let p = PathBuf::from("/etc/wshardd/wshardd.toml");
    assert_eq!(
        ConfigSource::Explicit(p.clone()).to_string(),
        "/etc/wshardd/wshardd.toml (--config)"
    );
    assert_eq!(
        ConfigSource::Env(p.clone()).to_string(),
        "/etc/wshardd/wshardd.toml ($WSHARDD_CONFIG)"
    );
    assert_eq!(
        ConfigSource::Found(p).to_string(),
        "/etc/wshardd/wshardd.toml"
    );
}
