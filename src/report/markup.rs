//! One walk of a report, one writer per format: the report walks its data once and says what
//! comes next (a title, a heading, a caption, a line, a list, a table of groups of columns, a
//! closing note); a [`Markup`] says how that is written, as plain text for a terminal
//! ([`Text`]) or as GitHub-flavoured Markdown ([`Markdown`]), as hyperfine's
//! `export/markup.rs` does. The text writer lays tables out in aligned columns under their
//! groups' titles; the Markdown writer as pipe tables. `compare` walks with these; `explain`'s
//! walk hands each part to the same two writers, which write it a row at a time.
//!
//! It decides no content and escapes nothing: what a report says, and how text from outside
//! is made safe in a format, stays with the report (`compare` and `explain` escape
//! differently). It is not HTML, CSV or JSON, which are not walked this way, nor a document
//! model: nothing is kept but the text written so far.

use std::fmt::Write;

/// Where a column's cells sit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Align {
    Left,
    Right,
}

/// A column: its name under its group's title (text), and its name standing alone (a
/// Markdown header cell, which has no group title over it).
pub struct Column {
    pub name: String,
    pub alone: String,
    pub align: Align,
}

impl Column {
    pub fn new(name: impl Into<String>, alone: impl Into<String>, align: Align) -> Column {
        Column {
            name: name.into(),
            alone: alone.into(),
            align,
        }
    }
}

/// Columns under one title: a run's figures, one ratio with its interval and verdict.
pub struct Group {
    pub title: String,
    pub columns: Vec<Column>,
    /// Markdown writes the group as one cell, its cells joined by spaces, named and aligned
    /// as its first column (a suite's point: the y and its interval in one cell).
    pub one_cell: bool,
}

impl Group {
    pub fn new(title: impl Into<String>, columns: Vec<Column>) -> Group {
        Group {
            title: title.into(),
            columns,
            one_cell: false,
        }
    }

    /// One column whose name is also its name alone.
    pub fn single(title: impl Into<String>, name: &str, align: Align) -> Group {
        Group::new(title, vec![Column::new(name, name, align)])
    }
}

/// A table: groups of columns, then rows of the groups' cells (a row holds, per group, one
/// cell per column).
pub struct Table {
    pub groups: Vec<Group>,
    pub rows: Vec<Vec<Vec<String>>>,
    /// Text writes the column names on a line under the titles.
    pub names: bool,
    /// Text writes fixed columns (alignment, least width), one space apart, without titles
    /// (the counters' layout, which documented examples match); else each column as wide as
    /// its widest cell.
    pub fixed: Option<Vec<(Align, usize)>>,
}

impl Table {
    pub fn new(groups: Vec<Group>) -> Table {
        Table {
            groups,
            rows: Vec::new(),
            names: true,
            fixed: None,
        }
    }

    pub fn row(&mut self, cells: Vec<Vec<String>>) {
        self.rows.push(cells);
    }
}

/// How a format writes what a report's walk says comes next. Each call appends to the
/// document; `finish` hands it over.
pub trait Markup {
    /// The document's title; `aside` follows it where the format has room for it.
    fn title(&mut self, title: &str, aside: &str);
    /// A section's heading with its gloss (which may be empty).
    fn heading(&mut self, title: &str, gloss: &str);
    /// A caption over a table within a section.
    fn caption(&mut self, text: &str);
    /// A line of its own (a paragraph in Markdown).
    fn line(&mut self, text: &str);
    /// A line that must not be missed (bold in Markdown).
    fn alert(&mut self, text: &str);
    /// A named fact on a line: "method: ..." in text, a "Method: ..." paragraph in Markdown.
    fn fact(&mut self, name: &str, value: &str);
    /// A list; `bang` marks its items as warnings where the format marks them.
    fn list(&mut self, items: &[String], bang: bool);
    /// A sentence closing a section ("Warnings: none").
    fn note(&mut self, text: &str);
    fn table(&mut self, t: &Table);
    /// Words a terminal reader is given and a mail leaves out: `s` in text, "" in Markdown.
    fn aside<'a>(&self, s: &'a str) -> &'a str;
    fn finish(self) -> String;
}

/// Plain text for a terminal.
#[derive(Default)]
pub struct Text(pub String);

/// GitHub-flavoured Markdown, for a mailing list or an issue.
#[derive(Default)]
pub struct Markdown(pub String);

impl Markup for Text {
    fn title(&mut self, title: &str, aside: &str) {
        let _ = writeln!(self.0, "{title}{aside}");
    }
    fn heading(&mut self, title: &str, gloss: &str) {
        let sep = if gloss.is_empty() { "" } else { " " };
        let _ = writeln!(self.0, "\n{title}{sep}{gloss}");
    }
    fn caption(&mut self, text: &str) {
        let _ = writeln!(self.0, "\n{text}");
    }
    fn line(&mut self, text: &str) {
        let _ = writeln!(self.0, "{text}");
    }
    fn alert(&mut self, text: &str) {
        self.line(text);
    }
    fn fact(&mut self, name: &str, value: &str) {
        let _ = writeln!(self.0, "{name}: {value}");
    }
    fn list(&mut self, items: &[String], bang: bool) {
        let mark = if bang { "! " } else { "" };
        for item in items {
            let _ = writeln!(self.0, "  {mark}{item}");
        }
    }
    fn note(&mut self, text: &str) {
        let _ = writeln!(self.0, "\n{text}");
    }
    fn table(&mut self, t: &Table) {
        match &t.fixed {
            Some(fixed) => self.0 += &fixed_text(t, fixed),
            None => self.0 += &grid_text(t),
        }
    }
    fn aside<'a>(&self, s: &'a str) -> &'a str {
        s
    }
    fn finish(self) -> String {
        self.0
    }
}

impl Markup for Markdown {
    fn title(&mut self, title: &str, _aside: &str) {
        let _ = writeln!(self.0, "## {title}");
    }
    fn heading(&mut self, title: &str, gloss: &str) {
        let sep = if gloss.is_empty() { "" } else { " " };
        let _ = writeln!(self.0, "\n**{title}**{sep}{gloss}");
    }
    fn caption(&mut self, text: &str) {
        let _ = writeln!(self.0, "\n{text}");
    }
    fn line(&mut self, text: &str) {
        let _ = writeln!(self.0, "\n{text}");
    }
    fn alert(&mut self, text: &str) {
        let _ = writeln!(self.0, "\n**{text}**");
    }
    fn fact(&mut self, name: &str, value: &str) {
        let mut chars = name.chars();
        let name: String = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        let _ = writeln!(self.0, "\n{name}: {value}");
    }
    fn list(&mut self, items: &[String], _bang: bool) {
        if items.is_empty() {
            return;
        }
        self.0.push('\n');
        for item in items {
            let _ = writeln!(self.0, "- {item}");
        }
    }
    fn note(&mut self, text: &str) {
        let _ = writeln!(self.0, "\n{text}.");
    }
    fn table(&mut self, t: &Table) {
        self.0.push('\n');
        self.0 += &pipe_table(t);
    }
    fn aside<'a>(&self, _s: &'a str) -> &'a str {
        ""
    }
    fn finish(self) -> String {
        self.0
    }
}

/// A Markdown table row.
pub fn pipe_row(cells: &[String]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

/// A Markdown table's rule: `---` for a column on the left, `---:` on the right.
pub fn pipe_rule(aligns: &[Align]) -> String {
    let cells: Vec<String> = aligns
        .iter()
        .map(|&a| if a == Align::Right { "---:" } else { "---" }.to_string())
        .collect();
    pipe_row(&cells)
}

/// The table as Markdown: the columns' names alone, then a line per row.
fn pipe_table(t: &Table) -> String {
    let mut head = Vec::new();
    let mut aligns = Vec::new();
    for g in &t.groups {
        let shown = if g.one_cell {
            &g.columns[..1.min(g.columns.len())]
        } else {
            &g.columns[..]
        };
        head.extend(shown.iter().map(|c| c.alone.clone()));
        aligns.extend(shown.iter().map(|c| c.align));
    }
    let mut s = pipe_row(&head) + &pipe_rule(&aligns);
    for row in &t.rows {
        let mut cells = Vec::new();
        for (g, block) in t.groups.iter().zip(row) {
            if g.one_cell {
                cells.push(block.join(" ").trim_end().to_string());
            } else {
                cells.extend(block.iter().cloned());
            }
        }
        s += &pipe_row(&cells);
    }
    s
}

/// Fixed columns one space apart, names first.
fn fixed_text(t: &Table, fixed: &[(Align, usize)]) -> String {
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(fixed)
            .map(|(cell, &(align, w))| pad(cell, align, w))
            .collect();
        padded.join(" ") + "\n"
    };
    let mut s = line(
        t.groups
            .iter()
            .flat_map(|g| g.columns.iter().map(|c| c.name.as_str()))
            .collect(),
    );
    for row in &t.rows {
        s += &line(row.iter().flatten().map(String::as_str).collect());
    }
    s
}

fn pad(cell: &str, align: Align, w: usize) -> String {
    match align {
        Align::Left => format!("{cell:<w$}"),
        Align::Right => format!("{cell:>w$}"),
    }
}

/// Every column as wide as its widest cell, columns of a group one space apart, groups
/// " | " apart, titles on a line above; lines end without spaces.
fn grid_text(t: &Table) -> String {
    let mut lines: Vec<Vec<Vec<String>>> = Vec::new();
    if t.names {
        lines.push(
            t.groups
                .iter()
                .map(|g| g.columns.iter().map(|c| c.name.clone()).collect())
                .collect(),
        );
    }
    lines.extend(t.rows.iter().cloned());
    let Some(first) = lines.first() else {
        return String::new();
    };
    let mut widths: Vec<Vec<usize>> = first.iter().map(|b| vec![0; b.len()]).collect();
    for line in &lines {
        for (b, block) in line.iter().enumerate() {
            for (k, cell) in block.iter().enumerate() {
                widths[b][k] = widths[b][k].max(cell.chars().count());
            }
        }
    }
    let block_width = |w: &[usize]| w.iter().sum::<usize>() + w.len().saturating_sub(1);
    // A title wider than its group widens the group's last column.
    for (b, g) in t.groups.iter().enumerate() {
        let w = block_width(&widths[b]);
        if let Some(last) = widths[b].last_mut() {
            *last += g.title.chars().count().saturating_sub(w);
        }
    }
    let mut out = String::new();
    let titles: Vec<String> = t
        .groups
        .iter()
        .enumerate()
        .map(|(b, g)| format!("{:<w$}", g.title, w = block_width(&widths[b])))
        .collect();
    let _ = writeln!(out, "{}", titles.join(" | ").trim_end());
    for line in &lines {
        let blocks: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(b, block)| {
                block
                    .iter()
                    .enumerate()
                    .map(|(k, cell)| pad(cell, t.groups[b].columns[k].align, widths[b][k]))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let _ = writeln!(out, "{}", blocks.join(" | ").trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(vec![
            Group::single("", "Test", Align::Left),
            Group::new(
                "Elapsed",
                vec![
                    Column::new("[1]", "Elapsed [1]", Align::Right),
                    Column::new("[2]", "Elapsed [2]", Align::Right),
                ],
            ),
        ]);
        t.row(vec![
            vec!["null".into()],
            vec!["1.5".into(), "12.25".into()],
        ]);
        t
    }

    #[test]
    fn text_aligns_columns_under_their_group_titles() {
        let mut m = Text::default();
        m.table(&sample());
        assert_eq!(
            m.finish(),
            "     | Elapsed\nTest | [1]   [2]\nnull | 1.5 12.25\n"
        );
    }

    #[test]
    fn markdown_names_each_column_alone_and_aligns_by_the_rule() {
        let mut m = Markdown::default();
        m.table(&sample());
        assert_eq!(
            m.finish(),
            "\n| Test | Elapsed [1] | Elapsed [2] |\n| --- | ---: | ---: |\n| null | 1.5 | 12.25 |\n"
        );
    }

    #[test]
    fn a_one_cell_group_is_one_markdown_cell_and_text_columns() {
        let mut t = sample();
        t.groups[1].one_cell = true;
        t.rows[0][1][1] = String::new();
        let mut m = Markdown::default();
        m.table(&t);
        assert_eq!(
            m.finish(),
            "\n| Test | Elapsed [1] |\n| --- | ---: |\n| null | 1.5 |\n"
        );
    }
}
