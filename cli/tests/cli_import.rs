//! `wshard import ...` and `wshard import bag ...` run `python -m wshard_ros.bag_import`
//! with the arguments passed through and exit with its code; a missing interpreter or package is exit 2 with the
//! install hint. The importer here is a stand-in package on PYTHONPATH (the real one is
//! tested by the ROS import tests); the interpreter is the machine's python3. The overview
//! (`wshard import --help`) and `wshard import npz|minari|d4rl` are wshard's own: their
//! exit codes are checked here, their conversions in import/tests.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn import(python: &Path, pythonpath: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wshard"));
    c.arg("import").args(args).env("WSHARD_PYTHON", python);
    match pythonpath {
        Some(p) => c.env("PYTHONPATH", p),
        None => c.env_remove("PYTHONPATH"),
    };
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A `python3` that sees no site-packages (`-S`), so no installed `wshard_ros`.
fn bare_python(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("bare-python");
    std::fs::write(&p, "#!/bin/sh\nexec python3 -S \"$@\"\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A stand-in `wshard_ros.bag_import` under `root` whose `__main__` runs `main`.
fn fake_importer(root: &Path, init: &str, main: &str) {
    let pkg = root.join("wshard_ros").join("bag_import");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(root.join("wshard_ros").join("__init__.py"), init).unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    std::fs::write(pkg.join("__main__.py"), main).unwrap();
}

#[test]
fn cli_import_missing_python() {
    let dir = tempfile::tempdir().unwrap();
    let o = import(&dir.path().join("no-such-python"), None, &["a.bag"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("wshard import: cannot run the Python interpreter"),
        "{t}"
    );
    assert!(t.contains("no-such-python` ($WSHARD_PYTHON)"), "{t}");
    assert!(t.contains("pip install ingest-adapters/ros"), "{t}");
}

#[test]
fn cli_import_missing_module() {
    let dir = tempfile::tempdir().unwrap();
    let py = bare_python(dir.path());
    let o = import(&py, Some(&dir.path().join("empty")), &["a.bag"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("cannot import wshard_ros.bag_import (No module named 'wshard_ros')"),
        "{t}"
    );
    assert!(t.contains("PYTHONPATH"), "{t}");
    // A package whose import fails says why.
    let root = dir.path().join("broken");
    fake_importer(&root, "raise ImportError('rosbags is missing')\n", "");
    let o = import(&py, Some(&root), &["a.bag"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("(rosbags is missing)"), "{}", text(&o));
}

#[test]
fn cli_import_passes_arguments_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let py = bare_python(dir.path());
    let root = dir.path().join("pkg");
    fake_importer(
        &root,
        "",
        "import json, sys\nprint(json.dumps(sys.argv[1:]))\nsys.exit(int(sys.argv[-1]))\n",
    );
    let args = ["x.bag", "--mapping", "m.toml", "--help", "-v", "a b", "7"];
    let o = import(&py, Some(&root), &args);
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
    let got: Vec<String> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got, args);
    let o = import(&py, Some(&root), &["0"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn cli_import_bag_word_goes_to_the_bag_importer() {
    let dir = tempfile::tempdir().unwrap();
    let py = bare_python(dir.path());
    let root = dir.path().join("pkg");
    fake_importer(
        &root,
        "",
        "import json, sys\nprint(json.dumps(sys.argv[1:]))\nsys.exit(int(sys.argv[-1]))\n",
    );
    let o = import(&py, Some(&root), &["bag", "x.bag", "--help", "3"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let got: Vec<String> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got, ["x.bag", "--help", "3"]);
}

#[test]
fn cli_import_help_lists_the_formats() {
    let dir = tempfile::tempdir().unwrap();
    // No python needed: the overview and the converters' help are wshard's own.
    let nopy = dir.path().join("no-such-python");
    for args in [&["--help"][..], &[], &["help"]] {
        let o = import(&nopy, None, args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        for word in ["import npz", "import minari", "import d4rl", "import [bag]"] {
            assert!(text(&o).contains(word), "{word}: {}", text(&o));
        }
    }
    let o = import(&nopy, None, &["d4rl", "--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("--data-dir <DIR>"), "{}", text(&o));
}

#[test]
fn cli_import_native_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let nopy = dir.path().join("no-such-python");
    // Usage: no --data-dir.
    let o = import(&nopy, None, &["npz", "x.npz"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap();
    // A bad source file: exit 1, naming the file.
    let bad = dir.path().join("bad.npz");
    std::fs::write(&bad, "not a zip").unwrap();
    let o = import(
        &nopy,
        None,
        &["npz", bad.to_str().unwrap(), "--data-dir", data_arg],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("bad.npz: not an .npz (zip) archive"),
        "{}",
        text(&o)
    );
    let h5 = dir.path().join("bad.hdf5");
    std::fs::write(&h5, "not hdf5").unwrap();
    let o = import(
        &nopy,
        None,
        &["d4rl", h5.to_str().unwrap(), "--data-dir", data_arg],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("not an HDF5 file"), "{}", text(&o));
    let o = import(
        &nopy,
        None,
        &[
            "minari",
            dir.path().to_str().unwrap(),
            "--data-dir",
            data_arg,
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("not a Minari dataset"), "{}", text(&o));
    // A bad option value: exit 2.
    for bad in [["--hz", "0"], ["--codec", "gzip"]] {
        let h5 = h5.to_str().unwrap();
        let o = import(
            &nopy,
            None,
            &["d4rl", h5, "--data-dir", data_arg, bad[0], bad[1]],
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    }
}
