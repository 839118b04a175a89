//! A plain-text table: columns padded to their widest cell, two spaces apart, no borders
//! (laid out by `comfy-table`; trailing blanks trimmed so output diffs cleanly).

use std::io::{self, Write};

use comfy_table::{presets, CellAlignment, ColumnConstraint, ContentArrangement};

/// How a column's cells are padded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    /// For numbers.
    Right,
}

/// Blanks between two columns.
const GAP: u16 = 2;

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

    fn layout(&self) -> comfy_table::Table {
        let mut t = comfy_table::Table::new();
        t.load_preset(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(&self.headers)
            .add_rows(&self.rows);
        let last = self.aligns.len().saturating_sub(1);
        for (i, (column, align)) in t.column_iter_mut().zip(&self.aligns).enumerate() {
            column.set_padding((0, if i == last { 0 } else { GAP }));
            column.set_cell_alignment(match align {
                Align::Left => CellAlignment::Left,
                Align::Right => CellAlignment::Right,
            });
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
        t
    }

    /// Write the header row and every row.
    ///
    /// # Errors
    /// Errors writing to `out`.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        for line in self.layout().lines() {
            writeln!(out, "{}", line.trim_end())?;
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
