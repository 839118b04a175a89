//! The workspace's library code returns typed errors: no function of a workspace member's
//! library returns `Result<_, String>` (a typed error, thiserror, names what was wrong and
//! lets callers tell the cases apart). Clippy cannot say so (`disallowed-types` does not
//! match generic arguments), so this reads the sources.
//!
//! What counts as library code: every `.rs` file under a member's `src/`, except binaries
//! (`src/bin/`, `main.rs`), test modules (`tests.rs`, and a file's `#[cfg(test)] mod` at its
//! end) and the members that exist only for tests ([`TEST_SUPPORT_MEMBERS`]).

use std::path::{Path, PathBuf};

/// Members whose code only tests use (this crate: the end-to-end test support).
const TEST_SUPPORT_MEMBERS: [&str; 1] = ["tests"];

/// The error types that are not typed.
const UNTYPED_ERRORS: [&str; 3] = ["String", "std::string::String", "alloc::string::String"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace root")
        .to_path_buf()
}

/// The `members` of the root Cargo.toml's `[workspace]`.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("root Cargo.toml");
    let start = manifest.find("members").expect("workspace members");
    let open = start + manifest[start..].find('[').expect("members list");
    let close = open + manifest[open..].find(']').expect("members list end");
    manifest[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The library sources under `dir`, recursively (binaries and test modules left out).
fn library_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "bin" && name != "tests" {
                library_sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "main.rs" && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The generic arguments of the `Result<` whose arguments start at `text[0]`, split at
/// their top level.
fn generic_args(text: &str) -> Vec<&str> {
    let mut depth = 1usize;
    let mut args = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    let last = &text[start..i];
                    // A trailing comma leaves nothing after it.
                    if !last.trim().is_empty() {
                        args.push(last);
                    }
                    return args;
                }
            }
            ',' if depth == 1 => {
                args.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    args
}

/// Every `Result<_, String>` in `source` (the lines before a trailing `#[cfg(test)] mod`,
/// comments left out): its line number.
fn untyped_results(source: &str) -> Vec<usize> {
    let mut code = String::new();
    let lines: Vec<&str> = source.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let test_module = t == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|next| next.trim_start().starts_with("mod "));
        if test_module {
            break;
        }
        if !t.starts_with("//") {
            code.push_str(line);
        }
        code.push('\n');
    }
    code.match_indices("Result<")
        .filter(|(at, _)| {
            let before = code[..*at].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
        .filter(|(at, m)| {
            let args = generic_args(&code[at + m.len()..]);
            args.len() == 2 && UNTYPED_ERRORS.contains(&args[1].trim())
        })
        .map(|(at, _)| code[..at].matches('\n').count() + 1)
        .collect()
}

#[test]
fn proto_typed_errors_finds_what_it_looks_for() {
    let source = "fn a() -> Result<(), String> {}\n\
                  fn b() -> std::result::Result<Vec<(u8, String)>, std::string::String> {}\n\
                  fn c() -> io::Result<String> {}\n\
                  fn d() -> Result<String, Error> {}\n\
                  fn e() -> PyResult<String> {}\n\
                  // fn f() -> Result<(), String>\n\
                  fn g() -> Result<\n    u64,\n    String,\n> {}\n\
                  #[cfg(test)]\nmod tests { fn h() -> Result<(), String> {} }\n";
    assert_eq!(untyped_results(source), [1, 2, 7]);
}

#[test]
fn proto_typed_errors_library_code_has_no_string_errors() {
    let root = workspace_root();
    let members = members(&root);
    assert!(members.len() >= 5, "members: {members:?}");
    let mut found = Vec::new();
    let mut files = 0;
    for member in members
        .iter()
        .filter(|m| !TEST_SUPPORT_MEMBERS.contains(&m.as_str()))
    {
        let mut sources = Vec::new();
        library_sources(&root.join(member).join("src"), &mut sources);
        for path in sources {
            files += 1;
            let text = std::fs::read_to_string(&path).expect("source file");
            for line in untyped_results(&text) {
                let shown = path.strip_prefix(&root).unwrap_or(&path).display();
                found.push(format!("{shown}:{line}"));
            }
        }
    }
    assert!(files > 100, "only {files} library files found");
    assert!(
        found.is_empty(),
        "library functions returning `Result<_, String>` (give each a typed error, \
         thiserror, naming what was wrong):\n{}",
        found.join("\n")
    );
}
