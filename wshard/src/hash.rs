//! Checksums and name hashes (spec 9).

/// CRC32C (Castagnoli) of `data`, as stored in index entries.
#[must_use]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Continue a CRC32C over more bytes.
#[must_use]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// xxHash64 with seed 0 of the UTF-8 name bytes.
#[must_use]
pub fn name_hash(name: &str) -> u64 {
    xxhash_rust::xxh64::xxh64(name.as_bytes(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_reference_vectors() {
        assert_eq!(crc32c(b"hello"), 0x9a71_bb4c);
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        let mut done = [0u8; 10];
        done[9] = 1;
        assert_eq!(crc32c(&done), 0x11b6_7368);
        assert_eq!(crc32c_append(crc32c(b"hel"), b"lo"), 0x9a71_bb4c);
    }

    #[test]
    fn xxh64_reference_vectors() {
        let cases = [
            ("signal/obs", 0x86f8_c841_3116_a0ae_u64),
            ("meta/manifest", 0x9a19_1dcd_3258_13d3),
            ("", 0xef46_db37_51d8_e999),
            ("meta/wshard", 0x01df_c9be_3d7e_14db),
            ("meta/episode", 0xa2e0_c948_bf7b_e04c),
            ("meta/channels", 0xa69f_81c8_7cd9_d55b),
            ("reward", 0xa6c3_5332_0cb8_fdec),
            ("done", 0x2d9f_951f_9452_251b),
            ("time/ticks", 0x6967_7cfa_6fbd_050c),
            ("signal/state", 0x97bb_eff4_9da8_aeb3),
            ("action/ctrl", 0x3c9e_bc2f_a77d_0c5c),
        ];
        for (name, want) in cases {
            assert_eq!(name_hash(name), want, "{name}");
        }
    }
}
