//! `systemd/install.sh` into a staging root (DESTDIR) with the binaries already built: the
//! files and their modes, the installed config passes `wshardd --check-config`, a second
//! run keeps an operator's changed config, and the staged units pass `systemd-analyze
//! verify` (when systemd-analyze is installed).

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use wshard_e2e::bins;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn install(stage: &Path) -> Output {
    let out = Command::new("sh")
        .arg(repo().join("systemd/install.sh"))
        .arg("--bin-dir")
        .arg(bins::bin_dir())
        .env("DESTDIR", stage)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "install.sh failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

fn check_config(stage: &Path, config: &Path) -> String {
    let out = Command::new(stage.join("usr/local/bin/wshardd"))
        .arg("--check-config")
        .arg("--config")
        .arg(config)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn service_install_stages_every_file_with_its_mode() {
    let _ = bins::wshardd();
    let stage = tempfile::tempdir().unwrap();
    let s = stage.path();
    install(s);
    for (path, want) in [
        ("usr/local/bin/wshardd", 0o755),
        ("usr/local/bin/wshard", 0o755),
        ("etc/wshardd/wshardd.toml", 0o644),
        ("etc/systemd/system/wshardd.service", 0o644),
        ("etc/systemd/system/wshardd.socket", 0o644),
        ("etc/systemd/system/wshardd-control.socket", 0o644),
        ("etc/sysusers.d/wshardd.conf", 0o644),
        ("etc/tmpfiles.d/wshardd.conf", 0o644),
    ] {
        assert_eq!(mode(&s.join(path)), want, "{path}");
    }
    let text = check_config(s, &s.join("etc/wshardd/wshardd.toml"));
    assert!(text.contains("data_dir = /var/lib/wshardd"), "{text}");
    assert!(
        text.contains("socket.path = /run/wshardd/wshardd.sock"),
        "{text}"
    );
    let unit = std::fs::read_to_string(s.join("etc/systemd/system/wshardd.service")).unwrap();
    assert!(
        unit.contains("\nExecStart=/usr/local/bin/wshardd --config /etc/wshardd/wshardd.toml\n")
    );
}

#[test]
fn service_config_shipped_passes_check_config() {
    let out = Command::new(bins::wshardd())
        .arg("--check-config")
        .arg("--config")
        .arg(repo().join("systemd/wshardd.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The paths agree with the socket units.
    let cfg = std::fs::read_to_string(repo().join("systemd/wshardd.toml")).unwrap();
    for (unit, key) in [
        ("wshardd.socket", "path = \"/run/wshardd/wshardd.sock\""),
        (
            "wshardd-control.socket",
            "path = \"/run/wshardd/control.sock\"",
        ),
    ] {
        let text = std::fs::read_to_string(repo().join("systemd").join(unit)).unwrap();
        let listen = key.trim_start_matches("path = ").trim_matches('"');
        assert!(text.contains(&format!("ListenStream={listen}\n")), "{unit}");
        assert!(cfg.contains(key), "{key}");
    }
}

#[test]
fn service_install_second_run_keeps_a_changed_config() {
    let _ = bins::wshardd();
    let stage = tempfile::tempdir().unwrap();
    let s = stage.path();
    install(s);
    let config = s.join("etc/wshardd/wshardd.toml");
    let changed = std::fs::read_to_string(&config)
        .unwrap()
        .replace("level = \"info\"", "level = \"debug\"");
    std::fs::write(&config, &changed).unwrap();
    let out = install(s);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("wshardd.toml.new"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), changed);
    assert_eq!(
        std::fs::read(s.join("etc/wshardd/wshardd.toml.new")).unwrap(),
        std::fs::read(repo().join("systemd/wshardd.toml")).unwrap()
    );
    check_config(s, &config);
    // A third run with the shipped config in place changes nothing.
    std::fs::copy(repo().join("systemd/wshardd.toml"), &config).unwrap();
    let out = install(s);
    assert!(String::from_utf8_lossy(&out.stdout).contains("(unchanged)"));
}

#[test]
fn service_install_staged_units_pass_systemd_analyze_verify() {
    let Some(analyze) = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
    else {
        println!("skipped: systemd-analyze not found (Debian package systemd)");
        return;
    };
    let _ = bins::wshardd();
    let stage = tempfile::tempdir().unwrap();
    let s = stage.path();
    install(s);
    // verify checks that ExecStart exists: point it at the staged binary.
    let units = tempfile::tempdir().unwrap();
    let staged_bin = s.join("usr/local/bin/wshardd");
    for name in [
        "wshardd.service",
        "wshardd.socket",
        "wshardd-control.socket",
    ] {
        let text = std::fs::read_to_string(s.join("etc/systemd/system").join(name)).unwrap();
        let text = text.replace(
            "ExecStart=/usr/local/bin/wshardd ",
            &format!("ExecStart={} ", staged_bin.display()),
        );
        std::fs::write(units.path().join(name), text).unwrap();
    }
    let out = Command::new(analyze)
        .arg("verify")
        .arg("--man=no")
        .args(
            [
                "wshardd.service",
                "wshardd.socket",
                "wshardd-control.socket",
            ]
            .map(|n| units.path().join(n)),
        )
        .env("SYSTEMD_LOG_LEVEL", "notice")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "systemd-analyze verify failed:\n{stderr}"
    );
    // Warnings (unknown keys, wrong sections) do not fail verify: fail on them here.
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("wshardd")).collect();
    assert!(
        warnings.is_empty(),
        "systemd-analyze verify warned:\n{stderr}"
    );
}
