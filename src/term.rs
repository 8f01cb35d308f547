//! What may reach a terminal: every text sysperf prints passes through here, whatever its
//! source (a label, a host name, an imported finding, another user's process name read from
//! /proc), so that no stored or foreign string can move the cursor, retitle the window, clear
//! the screen or reorder what the reader sees. This is not HTML or SVG escaping (that is
//! `report::escape`) and not CSV quoting; it is the last step before bytes leave the process.
//!
//! Escaped: the C0 controls except newline and tab (ESC, BEL, CR, backspace, ...), DEL, the C1
//! controls U+0080-U+009F (U+009B is an 8-bit CSI for some terminals) and the Unicode
//! bidirectional overrides and isolates ("Trojan source": text that reads differently from
//! what it is). Everything else, including all printable Unicode, passes unchanged.

use std::borrow::Cow;

/// Whether `c` would be interpreted rather than shown by a terminal or a bidi-aware viewer.
fn hostile(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every hostile character written as a visible escape: `\x1b` for the C0/C1
/// controls and DEL, `\u{202e}` for the bidi controls. Borrowed when nothing needed escaping.
pub fn text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(hostile) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !hostile(c) {
            out.push(c);
        } else if u32::from(c) < 0x100 {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        }
    }
    Cow::Owned(out)
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
