//! Arbitrary bytes through every reading entry point of the library: none may panic, and
//! none may allocate beyond the read limits (libFuzzer's `-malloc_limit_mb` catches that).

#![no_main]

use libfuzzer_sys::fuzz_target;
use wshard::episode::Episode;
use wshard::manifest::Manifest;
use wshard::read::{ReadLimits, ShardReader};

fn exercise(reader: &ShardReader<&[u8]>) {
    for i in 0..reader.index().len() {
        let _ = reader.read_entry(i);
    }
    let _ = reader.check_all();
    if let Ok(ep) = Episode::read(reader) {
        let _ = ep.validate();
    }
    if let Ok(m) = Manifest::read(reader) {
        let _ = m.validate_continuity();
        let _ = m.to_json();
    }
}

fuzz_target!(|data: &[u8]| {
    // Go's limits (exact total_file_size) and Python's leniency (total_file_size ignored
    // when it is not larger than the file) reach different code paths.
    if let Ok(r) = ShardReader::new(data, ReadLimits::default()) {
        exercise(&r);
    }
    let lenient = ReadLimits {
        require_exact_file_size: false,
        ..ReadLimits::default()
    };
    if let Ok(r) = ShardReader::new(data, lenient) {
        exercise(&r);
    }
});
