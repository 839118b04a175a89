//! The data directory lock: `wshard recover --apply` takes it with
//! `runtime::lock::acquire`, and a `wshardd` started on the same data directory is refused.

use wshard_recorder::runtime::lock;

#[test]
fn cli_recover_lock_is_the_one_wshardd_takes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    let config = dir.path().join("wshardd.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\n\n[socket]\npath = {:?}\n",
            data.display().to_string(),
            dir.path().join("d.sock").display().to_string()
        ),
    )
    .expect("write config");
    let _held = lock::acquire(&data).expect("lock");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wshardd"))
        .arg("--config")
        .arg(&config)
        .env_remove("WSHARDD_CONFIG")
        .output()
        .expect("run wshardd");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is in use"), "{stderr}");
    assert!(
        !dir.path().join("d.sock").exists(),
        "a refused daemon must not bind"
    );
}
