//! Reading a source file: its bytes (refused when they cannot be parsed) and its text in the
//! encoding it declares. Below both the builder and the input recorder.

/// A source file's bytes, or why it cannot be parsed (not a regular file, too large, binary).
pub(crate) fn read_bytes(path: &std::path::Path) -> Result<Vec<u8>, String> {
    const MAX: u64 = 256 * 1024 * 1024;
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    // A FIFO or device would block the read or never end.
    if !meta.is_file() {
        return Err("not a regular file; not read".into());
    }
    if meta.len() > MAX {
        return Err(format!(
            "file is {} bytes, over the {MAX}-byte limit",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err("binary file (NUL bytes); skipped".into());
    }
    Ok(bytes)
}

/// A file's text as the parser reads it, and what reading it found.
pub(crate) struct SourceFile {
    /// The text and how its offsets map to the file's bytes.
    pub decoded: crate::encoding::Decoded,
    /// The encoding the file itself declares (`inputenc`), if it does.
    pub declared: Option<crate::encoding::Encoding>,
    /// An `inputenc` option LEDGER does not read (the file was read as windows-1252, which
    /// keeps every byte).
    pub unknown: Option<String>,
}

/// How the encoding of a file is decided.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reading {
    /// UTF-8 (Markdown, SUMMARY.md).
    Utf8,
    /// A LaTeX file: the encoding it declares (`inputenc`), else the one of the file that
    /// included it, else UTF-8.
    Latex(Option<crate::encoding::Encoding>),
}

/// Decodes a file's bytes as `reading` says.
pub(crate) fn read_source(bytes: &[u8], reading: Reading) -> SourceFile {
    use crate::encoding::Encoding;
    let inherited = match reading {
        Reading::Utf8 => None,
        Reading::Latex(inherited) => Some(inherited),
    };
    let (declared, unknown) = match inherited.and_then(|_| crate::encoding::declared(bytes)) {
        Some(Ok(e)) => (Some(e), None),
        Some(Err(name)) => (Encoding::from_inputenc("latin1"), Some(name)),
        None => (None, None),
    };
    let encoding = declared.or(inherited.flatten()).unwrap_or(Encoding::UTF8);
    SourceFile {
        decoded: encoding.decode(bytes),
        declared,
        unknown,
    }
}
