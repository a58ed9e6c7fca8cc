//! Plain text tables for stdout (`rlx bench`, `rlx devices`), laid out by comfy-table: no
//! borders, one space between columns, numbers right-aligned, no trailing spaces.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

/// A borderless table with `header`; the columns whose index is in `right` are right-aligned.
pub fn plain(header: &[&str], right: &[usize]) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    for (i, column) in t.column_iter_mut().enumerate() {
        column.set_padding((0, 1));
        if right.contains(&i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The table's text, each line without trailing spaces, ending in a newline.
pub fn render(t: &Table) -> String {
    let mut s = t.trim_fmt();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    // Test helpers unwrap and panic: a failure is the point.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    #[test]
    fn columns_line_up_without_borders() {
        let mut t = super::plain(&["name", "ms"], &[1]);
        t.add_row(vec!["matmul 8³", "1.5"]).add_row(vec!["tiny", "12.25"]);
        assert_eq!(super::render(&t), "name         ms\nmatmul 8³   1.5\ntiny      12.25\n");
    }
}
