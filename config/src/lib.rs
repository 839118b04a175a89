//! wshardd configuration.
