//! A trigger's argument that is not what it must be, naming the field: the control verb's
//! `BAD_REQUEST` and the reason an `EVENT` labelled `trigger` fires no window.

/// `field` is wrong: `problem` says how (`must be an integer of milliseconds, is "x"`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {problem}")]
pub struct TriggerFieldError {
    pub field: String,
    pub problem: String,
}

impl TriggerFieldError {
    /// `field` is wrong as `problem` says.
    #[must_use]
    pub fn new(field: &str, problem: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            problem: problem.into(),
        }
    }
}
