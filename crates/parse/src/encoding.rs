//! Source files in the encoding LaTeX reads them in, decoded to text whose byte offsets map back
//! to the file's own bytes.
//!
//! A LaTeX file declares its encoding with `\usepackage[latin1]{inputenc}` (or `inputenx`, or
//! `\inputencoding{latin1}`); files it includes inherit the main file's. Every encoding
//! `inputenc` names that `encoding_rs` knows is decoded exactly, and writing the text back
//! gives the same bytes ([`Encoding::encode`]). A file without a declaration is UTF-8; a stray
//! invalid byte in it becomes U+FFFD with a warning at its line instead of losing the document.

use std::sync::LazyLock;

/// An encoding a source file is read in (`encoding_rs`'s, named by its WHATWG name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoding(&'static encoding_rs::Encoding);

impl Encoding {
    /// UTF-8, the default.
    pub const UTF8: Encoding = Encoding(encoding_rs::UTF_8);

    /// The encoding an `inputenc` option names (`latin1`, `cp1252`, `applemac` …); `None` for a
    /// name that is not an encoding. `latin1` is read as windows-1252, its superset, which maps
    /// every byte and writes each back unchanged.
    pub fn from_inputenc(option: &str) -> Option<Encoding> {
        use encoding_rs as e;
        let enc = match option.trim() {
            "utf8" | "utf8x" | "utf-8" => e::UTF_8,
            "latin1" | "ansinew" | "cp1252" | "latin-1" => e::WINDOWS_1252,
            "latin2" => e::ISO_8859_2,
            "latin3" => e::ISO_8859_3,
            "latin4" => e::ISO_8859_4,
            "latin5" => e::WINDOWS_1254,
            "latin9" => e::ISO_8859_15,
            "latin10" => e::ISO_8859_16,
            "cp1250" => e::WINDOWS_1250,
            "cp1251" => e::WINDOWS_1251,
            "cp1257" => e::WINDOWS_1257,
            "koi8-r" => e::KOI8_R,
            "koi8-u" => e::KOI8_U,
            "applemac" | "macce" => e::MACINTOSH,
            _ => return None,
        };
        Some(Encoding(enc))
    }

    /// The encoding a WHATWG name names (as [`Encoding::name`] gives it).
    pub fn from_name(name: &str) -> Option<Encoding> {
        encoding_rs::Encoding::for_label(name.as_bytes()).map(Encoding)
    }

    /// The WHATWG name (`UTF-8`, `windows-1252`).
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// Decodes `bytes`; sequences the encoding does not define become U+FFFD, each noted.
    pub fn decode(self, bytes: &[u8]) -> Decoded {
        if self.0 == encoding_rs::UTF_8 {
            return decode_utf8(bytes);
        }
        // The encodings `inputenc` names are single-byte: one character per byte (a byte
        // the encoding leaves undefined decodes to U+FFFD).
        let mut text = String::with_capacity(bytes.len() + bytes.len() / 8);
        let mut map = Vec::new();
        let mut invalid = Vec::new();
        let mut decoder = self.0.new_decoder_without_bom_handling();
        let mut buf = [0u8; 8];
        for (k, b) in bytes.iter().enumerate() {
            let at = text.len();
            let (result, _, written) = decoder.decode_to_utf8_without_replacement(
                std::slice::from_ref(b),
                &mut buf,
                false,
            );
            match (result, std::str::from_utf8(&buf[..written])) {
                (encoding_rs::DecoderResult::InputEmpty, Ok(c)) if !c.is_empty() => {
                    text.push_str(c)
                }
                _ => {
                    invalid.push(at);
                    text.push('\u{FFFD}');
                    decoder = self.0.new_decoder_without_bom_handling();
                }
            }
            if text.len() - at != 1 {
                map.push((text.len(), k + 1));
            }
        }
        Decoded {
            text,
            encoding: self,
            map,
            invalid,
            len: bytes.len(),
        }
    }

    /// `text` in this encoding, or the first character it cannot hold.
    pub fn encode(self, text: &str) -> Result<Vec<u8>, char> {
        if self.0 == encoding_rs::UTF_8 {
            return Ok(text.as_bytes().to_vec());
        }
        let (bytes, _, unmappable) = self.0.encode(text);
        if unmappable {
            let bad = text
                .chars()
                .find(|c| {
                    let mut s = [0u8; 4];
                    self.0.encode(c.encode_utf8(&mut s)).2
                })
                .unwrap_or('\u{FFFD}');
            return Err(bad);
        }
        Ok(bytes.into_owned())
    }
}

/// A file's text and how its offsets map to the file's bytes.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The text, in UTF-8.
    pub text: String,
    /// The encoding it was read in.
    pub encoding: Encoding,
    /// Where text and file offsets part: (text offset, file offset) after each character whose
    /// length differs between the two, in order. Empty when they are the same bytes.
    map: Vec<(usize, usize)>,
    /// Text offsets of the U+FFFD that stand for bytes the encoding does not define.
    pub invalid: Vec<usize>,
    /// The file's length in bytes.
    len: usize,
}

impl Decoded {
    /// Whether writing the text back in its encoding gives the file's bytes again (no byte was
    /// replaced).
    pub fn lossless(&self) -> bool {
        self.invalid.is_empty()
    }

    /// Whether text offsets are file offsets (UTF-8 without invalid bytes).
    pub fn identical(&self) -> bool {
        self.map.is_empty()
    }

    /// The file offset of a text offset.
    pub fn file_offset(&self, text_offset: usize) -> usize {
        let k = self.map.partition_point(|&(t, _)| t <= text_offset);
        match k.checked_sub(1).map(|k| self.map[k]) {
            Some((t, f)) => (f + (text_offset - t)).min(self.len),
            None => text_offset.min(self.len),
        }
    }

    /// The text offset of a file offset.
    pub fn text_offset(&self, file_offset: usize) -> usize {
        let k = self.map.partition_point(|&(_, f)| f <= file_offset);
        match k.checked_sub(1).map(|k| self.map[k]) {
            Some((t, f)) => (t + (file_offset - f)).min(self.text.len()),
            None => file_offset.min(self.text.len()),
        }
    }

    /// The file's length in bytes.
    pub fn file_len(&self) -> usize {
        self.len
    }

    /// The text alone.
    pub fn into_text(self) -> String {
        self.text
    }
}

/// The encoding a document read `file` in (its `Document::encodings` entry), UTF-8 when it has
/// none.
pub fn of_file(doc: &ledger_core::Document, file: usize) -> Encoding {
    doc.encodings
        .iter()
        .find(|(f, _)| *f == file)
        .and_then(|(_, name)| Encoding::from_name(name))
        .unwrap_or(Encoding::UTF8)
}

/// Reads `path` in `encoding`.
pub fn read(path: &std::path::Path, encoding: Encoding) -> std::io::Result<Decoded> {
    Ok(encoding.decode(&std::fs::read(path)?))
}

/// Moves the offsets of `doc`'s units and mentions in files not read as plain UTF-8 from the
/// files' bytes to their decoded text, for code that slices the text (the edits); files that
/// cannot be read again are left as they are.
pub fn offsets_into_text(doc: &mut ledger_core::Document) {
    for (file, _) in doc.encodings.clone() {
        let Some(path) = doc.files.get(file) else {
            continue;
        };
        let Ok(decoded) = read(std::path::Path::new(path), of_file(doc, file)) else {
            continue;
        };
        for u in doc.units.iter_mut().filter(|u| u.file == file) {
            u.start_byte = decoded.text_offset(u.start_byte);
            u.end_byte = decoded.text_offset(u.end_byte);
        }
        for m in doc.mentions.iter_mut().filter(|m| m.file == file) {
            m.start_byte = decoded.text_offset(m.start_byte);
            m.end_byte = decoded.text_offset(m.end_byte);
        }
    }
}

/// UTF-8, with each invalid sequence replaced by U+FFFD and noted.
fn decode_utf8(bytes: &[u8]) -> Decoded {
    match std::str::from_utf8(bytes) {
        Ok(s) => Decoded {
            text: s.to_string(),
            encoding: Encoding::UTF8,
            map: Vec::new(),
            invalid: Vec::new(),
            len: bytes.len(),
        },
        Err(_) => {
            let mut text = String::with_capacity(bytes.len() + 16);
            let mut map = Vec::new();
            let mut invalid = Vec::new();
            let mut file = 0;
            for chunk in bytes.utf8_chunks() {
                text.push_str(chunk.valid());
                file += chunk.valid().len();
                if !chunk.invalid().is_empty() {
                    invalid.push(text.len());
                    text.push('\u{FFFD}');
                    file += chunk.invalid().len();
                    map.push((text.len(), file));
                }
            }
            Decoded {
                text,
                encoding: Encoding::UTF8,
                map,
                invalid,
                len: bytes.len(),
            }
        }
    }
}

/// The encoding a LaTeX file declares for itself (the last `inputenc`/`inputenx` option or
/// `\inputencoding` outside comments), found in its raw bytes: every encoding it may name
/// writes ASCII as ASCII. `Err` names an option that is not an encoding LEDGER reads.
pub fn declared(bytes: &[u8]) -> Option<Result<Encoding, String>> {
    static DECL: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
        regex::bytes::Regex::new(
            r"(?m)^(?:[^%\n\\]|\\.)*?\\(?:usepackage\s*\[([^\]]*)\]\s*\{inputen[cx]\}|inputencoding\s*\{([^}]*)\})",
        )
        .expect("valid")
    });
    // Most files name no encoding: one substring search says so.
    memchr::memmem::find(bytes, b"inputen")?;
    let mut found = None;
    for c in DECL.captures_iter(bytes) {
        let options = c.get(1).or(c.get(2)).map_or(&b""[..], |m| m.as_bytes());
        let options = String::from_utf8_lossy(options);
        // The last option that names an encoding is the one inputenc uses.
        let named = options
            .split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .rev()
            .find_map(|o| Encoding::from_inputenc(o).map(Ok))
            .or_else(|| {
                options
                    .split(',')
                    .map(str::trim)
                    .rfind(|o| !o.is_empty())
                    .map(|o| Err(o.to_string()))
            });
        if named.is_some() {
            found = named;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_of_a_single_byte_encoding_goes_back_to_itself() {
        let all: Vec<u8> = (0..=255).collect();
        for name in ["latin1", "latin9", "cp1250", "applemac", "koi8-r"] {
            let enc = Encoding::from_inputenc(name).expect("known");
            let d = enc.decode(&all);
            if d.lossless() {
                assert_eq!(enc.encode(&d.text).expect("encodable"), all, "{name}");
            }
            for (k, _) in all.iter().enumerate() {
                let t = d.text_offset(k);
                assert_eq!(d.file_offset(t), k, "{name} byte {k}");
            }
        }
        let latin1 = Encoding::from_inputenc("latin1")
            .expect("known")
            .decode(&all);
        assert!(latin1.lossless());
    }

    #[test]
    fn offsets_map_between_text_and_file() {
        let bytes = b"caf\xe9 \\ref{a} na\xefve \\label{b}";
        let d = Encoding::from_inputenc("latin1")
            .expect("known")
            .decode(bytes);
        assert_eq!(d.text, "café \\ref{a} naïve \\label{b}");
        let at = d.text.find("\\label").expect("in text");
        assert_eq!(d.file_offset(at), 19);
        assert_eq!(&bytes[19..25], b"\\label");
        assert_eq!(d.text_offset(19), at);
    }

    #[test]
    fn a_stray_byte_in_utf8_is_replaced_and_noted() {
        let mut bytes = "é ok\n\u{2013} x ".as_bytes().to_vec();
        bytes.push(0xff);
        bytes.extend_from_slice(b" z");
        let d = Encoding::UTF8.decode(&bytes);
        assert_eq!(d.invalid.len(), 1);
        assert!(!d.lossless());
        let z = d.text.find('z').expect("z");
        assert_eq!(bytes[d.file_offset(z)], b'z');
    }

    #[test]
    fn the_declaration_is_read_from_the_raw_bytes() {
        let decl = |s: &[u8]| declared(s).map(|r| r.map(Encoding::name));
        assert_eq!(
            decl(b"\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage[latin1]{inputenc}\n"),
            Some(Ok("windows-1252"))
        );
        assert_eq!(decl(b"% \\usepackage[latin1]{inputenc}\n"), None);
        assert_eq!(
            decl(b"\\usepackage[utf8]{inputenc}\n\\inputencoding{latin9}\n"),
            Some(Ok("ISO-8859-15"))
        );
        assert_eq!(
            decl(b"\\usepackage[cp437]{inputenc}\n"),
            Some(Err("cp437".to_string()))
        );
    }
}
