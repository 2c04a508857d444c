//! Text from an artifact, a manifest, a probe or a download, made safe to print.
//!
//! A name inside a wheel, a manifest field or a Python's stderr is attacker-controlled:
//! printed raw, an ANSI sequence can clear the screen or move the cursor and draw a fake
//! `ok:`, a carriage return can overwrite the start of the line, a newline can start a
//! line of its own, and Unicode bidirectional controls can make text read in another
//! order than it is ("trojan source"). Human output shows each such character as an
//! escape (`\x1b`, `\r`, `\u{202e}`); JSON output stays exact (serde escapes control
//! characters itself, and the bidi controls are data there).

use std::borrow::Cow;
use std::fmt::Write;

/// Unicode's bidirectional formatting characters: embeddings, overrides and isolates.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

fn escaped(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| !keep(c) && (c.is_control() || is_bidi_control(c));
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !bad(c) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\n' => out.write_str("\\n"),
            '\r' => out.write_str("\\r"),
            '\t' => out.write_str("\\t"),
            c if (c as u32) < 0x100 => write!(out, "\\x{:02x}", c as u32),
            c => write!(out, "\\u{{{:x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}

/// One value on one line (a name, a field, a version): every control character
/// escaped, newlines included.
pub fn value(s: &str) -> Cow<'_, str> {
    escaped(s, |_| false)
}

/// A whole text for the terminal: lines and tabs kept, every other control
/// character and bidi control escaped.
pub fn text(s: &str) -> Cow<'_, str> {
    escaped(s, |c| c == '\n' || c == '\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_shown_as_escapes() {
        let evil = "lib\x1b[2J\x1b[Hok: all good\rFAIL\u{202e}os.so\u{7f}\u{85}";
        assert_eq!(
            value(evil),
            "lib\\x1b[2J\\x1b[Hok: all good\\rFAIL\\u{202e}os.so\\x7f\\x85"
        );
        assert_eq!(value("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(text("a\nb\tc\x1b"), "a\nb\tc\\x1b");
        // Plain text, any script, is untouched and not copied.
        for plain in ["libggml-cuda.so", "日本語 ü ∑", ""] {
            assert!(matches!(value(plain), Cow::Borrowed(_)), "{plain}");
        }
    }
}
