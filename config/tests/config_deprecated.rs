#![allow(clippy::unwrap_used)]
//! Renamed keys: the old name is still read, with a warning, and never together with the
//! new one.

use wshardd_config::{Config, ConfigError, DEPRECATED_KEYS};

const ORIGIN: &str = "/etc/wshardd/wshardd.toml";

#[test]
fn config_deprecated_max_episode_bytes_is_read_as_max_episode_wire_bytes() {
    let c = Config::from_toml_str("[limits]\nmax_episode_bytes = 5000000\n", ORIGIN).unwrap();
    assert_eq!(c.limits.max_episode_wire_bytes, 5_000_000);
    assert_eq!(c.deprecations.len(), 1);
    let d = c.deprecations[0];
    assert_eq!(
        (d.old, d.new),
        ("limits.max_episode_bytes", "limits.max_episode_wire_bytes")
    );
    assert_eq!(
        d.to_string(),
        "limits.max_episode_bytes is deprecated and read as limits.max_episode_wire_bytes \
         (it counts the bytes of timestep records received, not bytes on disk); rename it"
    );
    // Everything else is as if the new name had been used.
    let mut same =
        Config::from_toml_str("[limits]\nmax_episode_wire_bytes = 5000000\n", ORIGIN).unwrap();
    assert!(same.deprecations.is_empty());
    same.deprecations.clone_from(&c.deprecations);
    assert_eq!(same, c);
    // Also in the dotted and inline forms.
    for text in [
        "limits.max_episode_bytes = 5000000\n",
        "limits = { max_episode_bytes = 5000000 }\n",
    ] {
        let c = Config::from_toml_str(text, ORIGIN).unwrap();
        assert_eq!(c.limits.max_episode_wire_bytes, 5_000_000, "{text}");
        assert_eq!(c.deprecations.len(), 1, "{text}");
    }
}

#[test]
fn config_deprecated_and_new_name_together_is_an_error() {
    let e = Config::from_toml_str(
        "[limits]\nmax_episode_bytes = 5000000\nmax_episode_wire_bytes = 6000000\n",
        ORIGIN,
    )
    .unwrap_err();
    assert!(matches!(e, ConfigError::Invalid { .. }), "{e:?}");
    assert_eq!(e.key(), Some("limits.max_episode_bytes"));
    assert_eq!(
        e.to_string(),
        "config /etc/wshardd/wshardd.toml: limits.max_episode_bytes = 5000000: is the \
         deprecated name of limits.max_episode_wire_bytes, which is set too; keep only \
         limits.max_episode_wire_bytes"
    );
}

#[test]
fn config_deprecated_name_beside_another_error_blames_the_other_key() {
    let e = Config::from_toml_str(
        "[limits]\nmax_episode_bytes = 5000000\nmax_channels = \"many\"\n",
        ORIGIN,
    )
    .unwrap_err();
    assert_eq!(e.key(), Some("limits.max_channels"), "{e}");
    let e = Config::from_toml_str(
        "[limits]\nmax_episode_bytes = 5000000\nmax_chanels = 3\n",
        ORIGIN,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("unknown key `max_chanels` in table [limits]"),
        "{e}"
    );
}

#[test]
fn config_current_names_warn_about_nothing() {
    let c = Config::from_toml_str(wshardd_config::DEFAULT_CONFIG_TOML, ORIGIN).unwrap();
    assert!(c.deprecations.is_empty());
    // Every deprecated name is the old name of a key the schema has, in the same table.
    for d in DEPRECATED_KEYS {
        assert!(
            wshardd_config::schema_keys().any(|(k, _)| k == d.new),
            "{d}"
        );
        assert!(
            !wshardd_config::schema_keys().any(|(k, _)| k == d.old),
            "{d}"
        );
        assert_eq!(
            d.old.split_once('.').map(|x| x.0),
            d.new.split_once('.').map(|x| x.0)
        );
    }
}

#[test]
fn config_max_episode_id_bytes_up_to_the_ceiling() {
    let c = Config::from_toml_str("[limits]\nmax_episode_id_bytes = 200\n", ORIGIN).unwrap();
    assert_eq!(c.limits.max_episode_id_bytes, 200);
    assert_eq!(wshardd_config::MAX_EPISODE_ID_BYTES, 200);
    let e = Config::from_toml_str("[limits]\nmax_episode_id_bytes = 201\n", ORIGIN).unwrap_err();
    assert!(e.to_string().ends_with("must be 1..=200"), "{e}");
}
