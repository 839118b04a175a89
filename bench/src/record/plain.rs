//! The plain-append baseline of the cameras cases, run by this process right before each
//! daemon repetition so that both meet the same memory state (see the README: on this VM
//! the speed of page-cache writes depends on how recently free memory was used). The same
//! record bytes the daemon receives (`t_ns | cam0 | cam1 | joint_pos`, from the same
//! window), appended with one vectored `write` per timestep (no copy into a staging
//! buffer) to a new file, then `fsync`; timed from `File::create` through the `fsync`, as
//! the peer's `plain` mode.

use std::fs::File;
use std::io::{IoSlice, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use super::data::CameraWindow;
use crate::error::{fail, io_ctx, Result};

/// Write every byte of `parts` with as few `writev` calls as the kernel allows.
fn write_all_parts(f: &mut File, parts: &[&[u8]]) -> std::io::Result<()> {
    let mut idx = 0;
    let mut off = 0;
    while idx < parts.len() {
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(parts.len() - idx);
        slices.push(IoSlice::new(&parts[idx][off..]));
        slices.extend(parts[idx + 1..].iter().map(|p| IoSlice::new(p)));
        let mut n = f.write_vectored(&slices)?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while n > 0 && idx < parts.len() {
            let left = parts[idx].len() - off;
            if n >= left {
                n -= left;
                idx += 1;
                off = 0;
            } else {
                off += n;
                n = 0;
            }
        }
    }
    Ok(())
}

/// One timed plain append of `steps` camera records: (wall, of it the fsync, file bytes).
///
/// # Errors
/// I/O errors.
pub fn cameras(dir: &Path, window: &CameraWindow, steps: u64) -> Result<(Duration, Duration, u64)> {
    let path = dir.join("plain-cameras.bin");
    let t0 = Instant::now();
    let mut f = File::create(&path).map_err(|e| io_ctx("create", &path, e))?;
    for k in 0..steps {
        let (t, jp, c0, c1) = window.step(k);
        let ts = t.to_le_bytes();
        write_all_parts(&mut f, &[&ts, c0, c1, &jp]).map_err(|e| io_ctx("write", &path, e))?;
    }
    let t1 = Instant::now();
    f.sync_all().map_err(|e| io_ctx("fsync", &path, e))?;
    drop(f);
    let t2 = Instant::now();
    let len = std::fs::metadata(&path)
        .map_err(|e| io_ctx("stat", &path, e))?
        .len();
    std::fs::remove_file(&path).map_err(|e| io_ctx("remove", &path, e))?;
    let want = steps * teleop_workload::CAMERAS_RECORD_BYTES as u64;
    if len != want {
        return Err(fail(format!(
            "plain file holds {len} bytes, expected {want}"
        )));
    }
    Ok((t2 - t0, t2 - t1, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_exactly_the_records() {
        let dir = std::env::temp_dir().join(format!("wshard-bench-plain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("parts.bin");
        let mut f = File::create(&path).unwrap();
        write_all_parts(&mut f, &[b"ab", b"", b"cde", b"f"]).unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), b"abcdef");
        let w = CameraWindow::build(2);
        let (_, _, len) = cameras(&dir, &w, 3).unwrap();
        assert_eq!(len, 3 * teleop_workload::CAMERAS_RECORD_BYTES as u64);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
