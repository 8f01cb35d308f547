//! Bit-exact reading of the store's JSON columns.
//!
//! serde_json without its `float_roundtrip` feature (which this crate does not enable) parses
//! some 17-digit floats one ulp off, but the store promises that every field of a run comes
//! back exactly. So the store writes JSON with serde_json (whose shortest round-trip output is
//! exact under correct rounding) and reads it with this small parser, which builds a
//! `serde_json::Value` using the standard library's correctly rounded float parser and then
//! lets serde fill in the typed record.
//!
//! This is not a general JSON library: no streaming, no error positions beyond a byte offset,
//! nesting limited to [`MAX_DEPTH`] so that a damaged column cannot exhaust the stack.

use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

/// Deeper than anything the model produces, shallow enough for any stack.
const MAX_DEPTH: usize = 64;

/// Parses `text` and deserializes it into `T`, with floats exactly as written.
pub(super) fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let value = parse(text)?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Parses one JSON document into a `Value`.
pub(super) fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        format!("invalid JSON: {what} at byte {}", self.i)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn slice(&self, start: usize) -> Result<&str, String> {
        self.s
            .get(start..self.i)
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| self.err("bad text"))
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        match self.peek() {
            None => Err(self.err("unexpected end")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number().map(Value::Number),
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, String> {
        let end = self.i + word.len();
        if self.s.get(self.i..end) == Some(word.as_bytes()) {
            self.i = end;
            Ok(v)
        } else {
            Err(self.err("unknown literal"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.i += 1;
        let mut map = Map::new();
        self.ws();
        if self.eat(b'}') {
            return Ok(Value::Object(map));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a key"));
            }
            let key = self.string()?;
            self.ws();
            if !self.eat(b':') {
                return Err(self.err("expected ':'"));
            }
            self.ws();
            let v = self.value(depth + 1)?;
            map.insert(key, v);
            self.ws();
            if self.eat(b',') {
                continue;
            }
            if self.eat(b'}') {
                return Ok(Value::Object(map));
            }
            return Err(self.err("expected ',' or '}'"));
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            if self.eat(b',') {
                continue;
            }
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            return Err(self.err("expected ',' or ']'"));
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1; // the opening quote
        let mut out = String::new();
        loop {
            let start = self.i;
            while matches!(self.peek(), Some(c) if c != b'"' && c != b'\\' && c >= 0x20) {
                self.i += 1;
            }
            // The run ends at an ASCII byte or the end of a &str, so it is whole UTF-8.
            out.push_str(self.slice(start)?);
            match self.peek() {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    out.push(self.escape()?);
                }
                Some(_) => return Err(self.err("control character in string")),
            }
        }
    }

    fn escape(&mut self) -> Result<char, String> {
        let c = self.peek().ok_or_else(|| self.err("unterminated escape"))?;
        self.i += 1;
        Ok(match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    if !(self.eat(b'\\') && self.eat(b'u')) {
                        return Err(self.err("lone surrogate"));
                    }
                    let lo = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(self.err("lone surrogate"));
                    }
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                char::from_u32(code).ok_or_else(|| self.err("invalid \\u escape"))?
            }
            _ => return Err(self.err("unknown escape")),
        })
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let start = self.i;
        let end = start + 4;
        let text = self
            .s
            .get(start..end)
            .and_then(|b| std::str::from_utf8(b).ok())
            .filter(|t| t.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.err("bad \\u escape"))?;
        let v = u32::from_str_radix(text, 16).map_err(|_| self.err("bad \\u escape"))?;
        self.i = end;
        Ok(v)
    }

    fn number(&mut self) -> Result<Number, String> {
        let start = self.i;
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("bad number")),
        }
        let mut float = false;
        if self.eat(b'.') {
            float = true;
            if self.digits() == 0 {
                return Err(self.err("bad number"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            float = true;
            self.i += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits() == 0 {
                return Err(self.err("bad number"));
            }
        }
        let text = self.slice(start)?;
        if !float {
            if let Ok(u) = text.parse::<u64>() {
                return Ok(Number::from(u));
            }
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Number::from(i));
            }
            // Too large for an integer: read it as a float, as serde_json does.
        }
        // std's float parsing is correctly rounded, which is the point of this module.
        let f: f64 = text.parse().map_err(|_| self.err("bad number"))?;
        Number::from_f64(f).ok_or_else(|| self.err("number out of range"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_what_serde_json_writes() {
        let v = serde_json::json!({
            "a": [1, -2, 3.5, -0.0, 1e300, 5e-324, null, true, false],
            "s": "quote \" backslash \\ tab \t nl \n ctl \u{1} é 😀",
            "nested": {"x": {"y": []}, "u": u64::MAX, "i": i64::MIN},
        });
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(parse(&text).unwrap(), v);
    }

    #[test]
    fn accepts_escapes_and_whitespace() {
        let v = parse(" { \"k\" : \"\\u00e9\\ud83d\\ude00\\/\" } ").unwrap();
        assert_eq!(v, serde_json::json!({"k": "é😀/"}));
    }

    #[test]
    fn rejects_malformed_input_without_panicking() {
        for bad in [
            "",
            "{",
            "[1,",
            "[1 2]",
            "{\"a\"}",
            "{\"a\":}",
            "01x",
            "-",
            "1.",
            "1e",
            "\"abc",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\u12\"",
            "nul",
            "tru",
            "[1]]",
            "1e999",
            "{1:2}",
            "\"\u{1}\"",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let deep = "[".repeat(10_000);
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn seventeen_digit_floats_are_exact() {
        // Values whose shortest form has 17 significant digits, where a fast parser may be off.
        for f in [
            0.0_f64,
            0.1 + 0.2,
            123.456_789_012_345_68,
            2.225_073_858_507_201e-308,
            9_007_199_254_740_993.0,
            1.797_693_134_862_315_7e308,
        ] {
            let text = serde_json::to_string(&f).unwrap();
            let back: f64 = from_str(&text).unwrap();
            assert_eq!(back.to_bits(), f.to_bits(), "{text}");
        }
    }

    proptest! {
        #[test]
        fn any_finite_float_round_trips_bit_exact(bits in any::<u64>()) {
            let f = f64::from_bits(bits);
            prop_assume!(f.is_finite());
            let text = serde_json::to_string(&f).unwrap();
            let back: f64 = from_str(&text).unwrap();
            prop_assert_eq!(back.to_bits(), f.to_bits());
        }

        #[test]
        fn any_string_round_trips(s in any::<String>()) {
            let text = serde_json::to_string(&s).unwrap();
            let back: String = from_str(&text).unwrap();
            prop_assert_eq!(back, s);
        }

        #[test]
        fn arbitrary_text_never_panics(s in ".{0,64}") {
            let _ = parse(&s);
        }
    }
}
