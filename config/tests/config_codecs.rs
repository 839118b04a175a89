#![allow(clippy::unwrap_used)]
//! `[codecs]`: default codec and channel patterns.

use wshardd_config::{codec_to_string, Codec, Config};

fn config(text: &str) -> Config {
    Config::from_toml_str(text, "codecs.toml").unwrap()
}

#[test]
fn config_codec_names_parse() {
    for (text, codec) in [
        ("none", Codec::None),
        ("lz4", Codec::Lz4),
        ("zstd", Codec::Zstd { level: 3 }),
        ("zstd-1", Codec::Zstd { level: 1 }),
        ("zstd-22", Codec::Zstd { level: 22 }),
    ] {
        let c = config(&format!("[codecs]\ndefault = {text:?}\n"));
        assert_eq!(c.codecs.default, codec, "{text}");
    }
    assert_eq!(codec_to_string(Codec::Zstd { level: 9 }), "zstd-9");
    assert_eq!(codec_to_string(Codec::Lz4), "lz4");
    assert_eq!(codec_to_string(Codec::None), "none");
}

#[test]
fn config_codec_for_without_patterns_is_default() {
    let c = config("[codecs]\ndefault = \"lz4\"\n");
    assert_eq!(c.codecs.codec_for("anything"), Codec::Lz4);
    assert_eq!(
        Config::default().codecs.codec_for("x"),
        Codec::Zstd { level: 3 }
    );
}

#[test]
fn config_codec_for_patterns() {
    let c = config(
        r#"
[codecs]
default = "zstd-3"

[codecs.channels]
"cam*" = "lz4"
"cam_depth*" = "zstd-9"
cam_depth_raw = "none"
"cam_depth_raw*" = "zstd-1"
imu = "none"
"*" = "zstd-5"
"#,
    );
    let f = |name| c.codecs.codec_for(name);
    // Exact name beats every prefix, even a longer one.
    assert_eq!(f("cam_depth_raw"), Codec::None);
    assert_eq!(f("imu"), Codec::None);
    // The longest prefix wins.
    assert_eq!(f("cam_depth_raw2"), Codec::Zstd { level: 1 });
    assert_eq!(f("cam_depth"), Codec::Zstd { level: 9 });
    assert_eq!(f("cam_depth_x"), Codec::Zstd { level: 9 });
    assert_eq!(f("cam_rgb"), Codec::Lz4);
    assert_eq!(f("cam"), Codec::Lz4);
    // "*" matches everything else.
    assert_eq!(f("imu2"), Codec::Zstd { level: 5 });
    assert_eq!(f("joint_pos"), Codec::Zstd { level: 5 });
}

#[test]
fn config_codec_for_falls_back_to_default() {
    let c = config(
        "[codecs]\ndefault = \"none\"\n[codecs.channels]\n\"cam*\" = \"lz4\"\nimu = \"zstd\"\n",
    );
    assert_eq!(c.codecs.codec_for("ca"), Codec::None);
    assert_eq!(c.codecs.codec_for("imu_2"), Codec::None);
    assert_eq!(c.codecs.codec_for("xcam"), Codec::None);
}

#[test]
fn config_codecs_round_trip_through_toml() {
    let c = config("[codecs.channels]\n\"cam*\" = \"lz4\"\nimu = \"zstd\"\n");
    let text = toml::to_string(&c).unwrap();
    assert_eq!(Config::from_toml_str(&text, "round trip").unwrap(), c);
}
