//! A plain-text table: columns padded to their widest cell, two spaces apart.

use std::io::{self, Write};

/// How a column's cells are padded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    /// For numbers.
    Right,
}

/// A table with a header row.
#[derive(Clone, Debug)]
pub struct Table {
    headers: Vec<String>,
    aligns: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles and alignments.
    #[must_use]
    pub fn new(columns: &[(&str, Align)]) -> Self {
        Self {
            headers: columns.iter().map(|(h, _)| (*h).to_owned()).collect(),
            aligns: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    /// Add a row; missing cells are blank and extra cells are dropped.
    pub fn push(&mut self, mut row: Vec<String>) {
        row.resize(self.headers.len(), String::new());
        self.rows.push(row);
    }

    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (wi, cell) in w.iter_mut().zip(row) {
                *wi = (*wi).max(cell.chars().count());
            }
        }
        w
    }

    fn write_row(&self, out: &mut dyn Write, row: &[String], widths: &[usize]) -> io::Result<()> {
        let mut line = String::new();
        for (k, ((cell, &width), align)) in row.iter().zip(widths).zip(&self.aligns).enumerate() {
            if k > 0 {
                line.push_str("  ");
            }
            let pad = width.saturating_sub(cell.chars().count());
            match align {
                Align::Left => {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                }
                Align::Right => {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
        }
        writeln!(out, "{}", line.trim_end())
    }

    /// Write the header row and every row.
    ///
    /// # Errors
    /// Errors writing to `out`.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let widths = self.widths();
        self.write_row(out, &self.headers, &widths)?;
        for row in &self.rows {
            self.write_row(out, row, &widths)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_columns() {
        let mut t = Table::new(&[("name", Align::Left), ("size", Align::Right)]);
        t.push(vec!["reward".into(), "40".into()]);
        t.push(vec!["done".into(), "1000".into()]);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "name    size\nreward    40\ndone    1000\n"
        );
    }
}
