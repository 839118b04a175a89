//! One-line JSON objects for machine-readable results (no dependency needed for this).

use std::fmt::Write;

/// A JSON object built key by key, rendered on one line in insertion order.
#[derive(Clone, Debug, Default)]
pub struct JsonLine {
    fields: Vec<(&'static str, String)>,
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl JsonLine {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn str(mut self, key: &'static str, value: &str) -> Self {
        self.fields.push((key, escape(value)));
        self
    }

    pub fn int(mut self, key: &'static str, value: u64) -> Self {
        self.fields.push((key, value.to_string()));
        self
    }

    /// A float rounded to 3 decimals; `null` when not finite.
    pub fn num(mut self, key: &'static str, value: f64) -> Self {
        let v = if value.is_finite() {
            format!("{:.3}", value)
        } else {
            "null".to_owned()
        };
        self.fields.push((key, v));
        self
    }

    pub fn bool(mut self, key: &'static str, value: bool) -> Self {
        self.fields.push((key, value.to_string()));
        self
    }

    pub fn opt_num(self, key: &'static str, value: Option<f64>) -> Self {
        self.num(key, value.unwrap_or(f64::NAN))
    }

    pub fn render(&self) -> String {
        let body: Vec<String> = self
            .fields
            .iter()
            .map(|(k, v)| format!("{}:{v}", escape(k)))
            .collect();
        format!("{{{}}}", body.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_in_order_with_escapes() {
        let j = JsonLine::new()
            .str("a", "x\"y")
            .int("b", 3)
            .num("c", 1.5)
            .num("d", f64::NAN);
        assert_eq!(j.render(), r#"{"a":"x\"y","b":3,"c":1.500,"d":null}"#);
    }
}
