//! What may reach a terminal: every text sysperf prints passes through here, whatever its
//! source (a label, a host name, an imported finding, another user's process name read from
//! /proc), so that no stored or foreign string can move the cursor, retitle the window, clear
//! the screen or reorder what the reader sees. This is not HTML or SVG escaping (that is
//! `report::escape`, which marks the same invisible characters with [`visible`]) and not CSV
//! quoting; it is the last step before bytes leave the process.
//!
//! Escaped: the C0 controls except newline and tab (ESC, BEL, CR, backspace, ...), DEL, the C1
//! controls U+0080-U+009F (U+009B is an 8-bit CSI for some terminals), the Unicode
//! bidirectional controls (the overrides and isolates U+202A-U+202E, U+2066-U+2069, and the
//! marks U+200E, U+200F, U+061C: "Trojan source", text that reads differently from what it
//! is) and the zero-width characters (U+200B-U+200D, U+2060, U+FEFF: `adm\u{200b}in` shows
//! as "admin"). Everything else, including all printable Unicode, passes unchanged.
//!
//! [`line`] also escapes newline and tab: for text that must stay one line (a process name, a
//! host name, a finding's title), read from the machine or the store, so that it cannot
//! forge a line of its own in a report. The fingerprint and the doctor store what they read
//! from the machine through it, which also keeps every run exportable (the export file allows
//! no control character in such fields).

use std::borrow::Cow;

/// Whether `c` changes how the text around it reads without showing itself: a bidi control
/// or a zero-width character.
pub fn deceptive(c: char) -> bool {
    matches!(
        c,
        '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{061c}'
            | '\u{200b}'..='\u{200d}'
            | '\u{2060}'
            | '\u{feff}'
    )
}

/// Whether `c` would be interpreted rather than shown by a terminal or a bidi-aware viewer.
fn hostile(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || deceptive(c)
}

/// `s` with every character `escape` says so written as a visible escape: `\x1b` for the
/// C0/C1 controls and DEL, `\u{202e}` above U+00FF. Borrowed when nothing needed escaping.
fn escaped(s: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !escape(c) {
            out.push(c);
        } else if u32::from(c) < 0x100 {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        }
    }
    Cow::Owned(out)
}

/// `s` with every hostile character written as a visible escape (newlines and tabs kept).
pub fn text(s: &str) -> Cow<'_, str> {
    escaped(s, hostile)
}

/// `s` as one line: as [`text`], newline and tab escaped too (`\x0a`, `\x09`).
pub fn line(s: &str) -> Cow<'_, str> {
    escaped(s, |c| c.is_control() || deceptive(c))
}

/// `s` with only the [`deceptive`] characters escaped, for writers that escape the rest their
/// own way (HTML and SVG: `report::escape`; the flame graph's drawing library).
pub fn visible(s: &str) -> Cow<'_, str> {
    escaped(s, deceptive)
}

/// JSON text (as serde_json writes it) with the hostile characters that JSON allows raw
/// (DEL, C1, bidi) written as `\uXXXX` escapes: the same document to a parser, inert on a
/// terminal. serde_json already escapes the C0 controls; outside strings none of these
/// characters can occur, so escaping them anywhere is escaping them in strings.
pub fn json(s: &str) -> Cow<'_, str> {
    if !s.chars().any(hostile) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if hostile(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_become_visible() {
        let title = "a\u{1b}]0;owned\u{7}\u{1b}[2Jb";
        assert_eq!(text(title), "a\\x1b]0;owned\\x07\\x1b[2Jb");
        assert_eq!(text("x\ry\u{7f}z\u{9b}"), "x\\x0dy\\x7fz\\x9b");
        assert_eq!(text("rtl\u{202e}gnp.exe"), "rtl\\u{202e}gnp.exe");
    }

    #[test]
    fn invisible_characters_are_marked() {
        assert_eq!(text("adm\u{200b}in"), "adm\\u{200b}in");
        assert_eq!(
            text("a\u{200c}\u{200d}\u{2060}\u{feff}\u{200e}\u{200f}\u{61c}\u{2066}b"),
            "a\\u{200c}\\u{200d}\\u{2060}\\u{feff}\\u{200e}\\u{200f}\\u{61c}\\u{2066}b"
        );
        assert_eq!(visible("x\u{202e}y\u{1b}\n"), "x\\u{202e}y\u{1b}\n");
        assert!(matches!(visible("plain <b>"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_line_cannot_make_another() {
        assert_eq!(line("ok\n  ! FAKE\tx"), "ok\\x0a  ! FAKE\\x09x");
        assert_eq!(line("a\u{1b}[2J\u{202e}"), "a\\x1b[2J\\u{202e}");
        assert_eq!(text("ok\n  ! FAKE"), "ok\n  ! FAKE");
        assert!(matches!(line("sysperf:pipe (x) 日本"), Cow::Borrowed(_)));
    }

    #[test]
    fn ordinary_text_is_untouched_and_borrowed() {
        for s in ["Table 2\n\tµs/op ± 3%", "héllo 日本", ""] {
            assert!(matches!(text(s), Cow::Borrowed(_)), "{s:?}");
            assert!(matches!(json(s), Cow::Borrowed(_)), "{s:?}");
        }
    }

    #[test]
    fn json_stays_the_same_document() {
        let v = serde_json::json!({"t": "a\u{1b}[2J\u{9b}31m\u{7f}\u{2066}z", "n": [1, 2]});
        let raw = serde_json::to_string(&v).unwrap();
        let safe = json(&raw);
        assert!(!safe.chars().any(hostile), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
    }
}
