#![allow(clippy::unwrap_used)]

use super::*;
use crate::fsio::replace_atomically;

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

fn write(fs: &SimFs, path: &str, bytes: &[u8], sync: bool) {
    let mut f = fs.create(&p(path)).unwrap();
    f.write_all(bytes).unwrap();
    if sync {
        f.sync_data().unwrap();
    }
}

#[test]
fn sim_unsynced_data_and_entries_are_lost() {
    let fs = SimFs::new();
    fs.mkdir_durable(&p("/d")).unwrap();
    write(&fs, "/d/synced_no_dir", b"a", true);
    let img = fs.power_cut_image(PowerLoss::DropUnsynced);
    assert!(!img.exists(&p("/d/synced_no_dir")), "dir never synced");

    fs.sync_dir(&p("/d")).unwrap();
    write(&fs, "/d/later", b"b", true);
    let mut f = fs.open_append(&p("/d/synced_no_dir")).unwrap();
    f.write_all(b"unsynced").unwrap();
    let img = fs.power_cut_image(PowerLoss::DropUnsynced);
    assert_eq!(img.read(&p("/d/synced_no_dir")).unwrap(), b"a");
    assert!(!img.exists(&p("/d/later")));
    // The live image is untouched by a power-cut image.
    assert_eq!(fs.read(&p("/d/synced_no_dir")).unwrap(), b"aunsynced");
}

#[test]
fn sim_rename_between_directories_is_durable_per_directory() {
    let fs = SimFs::new();
    fs.mkdir_durable(&p("/a")).unwrap();
    fs.mkdir_durable(&p("/b")).unwrap();
    write(&fs, "/a/f", b"1", true);
    fs.sync_dir(&p("/a")).unwrap();
    fs.rename(&p("/a/f"), &p("/b/f")).unwrap();
    fs.sync_dir(&p("/a")).unwrap();
    let img = fs.power_cut_image(PowerLoss::DropUnsynced);
    assert!(
        !img.exists(&p("/a/f")) && !img.exists(&p("/b/f")),
        "in neither"
    );
    fs.sync_dir(&p("/b")).unwrap();
    let img = fs.power_cut_image(PowerLoss::DropUnsynced);
    assert_eq!(img.read(&p("/b/f")).unwrap(), b"1");
}

#[test]
fn sim_rename_is_undone_without_sync_dir() {
    let fs = SimFs::new();
    fs.mkdir_durable(&p("/d")).unwrap();
    replace_atomically(&fs, &p("/d/m"), b"one").unwrap();
    write(&fs, "/d/m.tmp", b"two", true);
    fs.rename(&p("/d/m.tmp"), &p("/d/m")).unwrap();
    let img = fs.power_cut_image(PowerLoss::DropUnsynced);
    assert_eq!(img.read(&p("/d/m")).unwrap(), b"one");
    fs.sync_dir(&p("/d")).unwrap();
    let img = fs.power_cut_image(PowerLoss::DropUnsynced);
    assert_eq!(img.read(&p("/d/m")).unwrap(), b"two");
    assert_eq!(img.read_dir(&p("/d")).unwrap(), vec![p("/d/m")]);
    fs.remove_file(&p("/d/m")).unwrap();
    let img = fs.power_cut_image(PowerLoss::DropUnsynced);
    assert_eq!(img.read(&p("/d/m")).unwrap(), b"two", "removal not synced");
}

#[test]
fn sim_crash_after_n_operations() {
    let fs = SimFs::new();
    fs.mkdir_durable(&p("/d")).unwrap();
    fs.crash_after(2);
    let mut f = fs.create(&p("/d/f")).unwrap(); // 1
    f.write_all(b"x").unwrap(); // 2
    assert_eq!(f.sync_data().unwrap_err().raw_os_error(), Some(EIO)); // 3: power lost
    assert!(fs.is_crashed());
    assert!(fs.read(&p("/d/f")).is_err());
    assert!(fs.create(&p("/d/g")).is_err());
    assert_eq!(fs.ops(), 3);
    let img = fs.power_cut_image(PowerLoss::DropUnsynced);
    assert!(!img.exists(&p("/d/f")));
    assert!(img.create(&p("/d/g")).is_ok());
}

#[test]
fn sim_short_write_then_write_all_completes() {
    let fs = SimFs::new();
    fs.mkdir_durable(&p("/d")).unwrap();
    fs.inject(OpKind::Write, 1, FaultKind::ShortWrite);
    let mut f = fs.create(&p("/d/f")).unwrap();
    assert_eq!(f.write(b"abcdef").unwrap(), 3);
    f.write_all(b"def").unwrap();
    assert_eq!(fs.read(&p("/d/f")).unwrap(), b"abcdef");
    assert_eq!(fs.faults_fired(), 1);
    let log = fs.log();
    assert!(log.iter().any(|r| r.outcome == Outcome::Short(3)));
}

#[test]
fn sim_failed_fsync_poisons_the_file() {
    let fs = SimFs::new();
    fs.mkdir_durable(&p("/d")).unwrap();
    fs.inject_on(OpKind::Sync, "/d/f", 1, FaultKind::FsyncFails);
    let mut f = fs.create(&p("/d/f")).unwrap();
    fs.sync_dir(&p("/d")).unwrap();
    f.write_all(b"lost").unwrap();
    assert!(f.sync_data().is_err());
    // A retry "succeeds" but persists nothing: the kernel dropped the dirty pages.
    f.sync_data().unwrap();
    let img = fs.power_cut_image(PowerLoss::DropUnsynced);
    assert_eq!(img.read(&p("/d/f")).unwrap(), b"");
}

#[test]
fn sim_enospc_and_eio_faults() {
    let fs = SimFs::new();
    fs.mkdir_durable(&p("/d")).unwrap();
    fs.inject_on(OpKind::Write, "b", 2, FaultKind::Enospc);
    fs.inject(OpKind::Rename, 1, FaultKind::Eio);
    let mut a = fs.create(&p("/d/a")).unwrap();
    let mut b = fs.create(&p("/d/b")).unwrap();
    a.write_all(b"1").unwrap();
    b.write_all(b"1").unwrap();
    a.write_all(b"2").unwrap();
    let e = b.write_all(b"2").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(ENOSPC));
    assert_eq!(
        fs.rename(&p("/d/a"), &p("/d/c"))
            .unwrap_err()
            .raw_os_error(),
        Some(EIO)
    );
    assert!(fs.exists(&p("/d/a")));
}

#[test]
fn sim_torn_tails_keep_a_prefix() {
    let fs = SimFs::new();
    fs.mkdir_durable(&p("/d")).unwrap();
    let mut f = fs.create(&p("/d/f")).unwrap();
    fs.sync_dir(&p("/d")).unwrap();
    f.write_all(b"synced|").unwrap();
    f.sync_data().unwrap();
    f.write_all(&[7u8; 4000]).unwrap();
    let mut lens = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let img = fs.power_cut_image(PowerLoss::KeepTailPrefix { seed });
        let got = img.read(&p("/d/f")).unwrap();
        assert!(got.starts_with(b"synced|"));
        assert!(got[7..].iter().all(|&b| b == 7));
        lens.insert(got.len());
        let img = fs.power_cut_image(PowerLoss::KeepTailGarbage { seed });
        let got = img.read(&p("/d/f")).unwrap();
        assert!(got.starts_with(b"synced|"));
    }
    assert!(lens.len() > 5, "{lens:?}");
}

#[test]
fn sim_export_copies_the_tree() {
    let fs = SimFs::new();
    fs.mkdir_durable(&p("/data/ep")).unwrap();
    write(&fs, "/data/ep/x", b"xx", false);
    let dir = tempfile::tempdir().unwrap();
    fs.export_to(&p("/data"), dir.path()).unwrap();
    assert_eq!(std::fs::read(dir.path().join("ep/x")).unwrap(), b"xx");
}
