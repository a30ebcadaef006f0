//! Standard output for data. A reader that closed the pipe (`ledger sql … | head`) only stops
//! the output: what is left has no reader, and the command goes on and exits as it would have
//! (an edit is still written). Any other failure to write stdout ends the process with exit
//! code 2, as an unwritable result must.

use std::fmt::Arguments;
use std::io::Write;

/// Writes `args` (and a newline when `newline`) to stdout.
pub fn write(args: Arguments<'_>, newline: bool) {
    write_with(|out| {
        out.write_fmt(args)?;
        if newline {
            out.write_all(b"\n")
        } else {
            Ok(())
        }
    });
}

/// Writes `bytes` to stdout, as [`write`] does.
pub fn write_bytes(bytes: &[u8]) {
    write_with(|out| out.write_all(bytes));
}

fn write_with(f: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>) {
    let mut out = std::io::stdout().lock();
    let written = f(&mut out).and_then(|()| out.flush());
    if let Err(e) = written
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("error: writing to standard output: {e}");
        std::process::exit(2);
    }
}

/// `println!` through [`write`].
macro_rules! outln {
    () => {
        $crate::output::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*), true)
    };
}

/// `print!` through [`write`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*), false)
    };
}

pub(crate) use {out, outln};

/// An error and its causes, each said once: a cause whose text (or, after its own `kind: `
/// prefix, its message) an outer one already holds is left out (DataFusion's errors repeat
/// their sources in their own text).
pub fn said_once(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        let message = text.split_once(": ").map_or(text.as_str(), |(_, m)| m);
        // A short message could be in an outer text by chance.
        let known = |p: &String| p.contains(&text) || (message.len() >= 12 && p.contains(message));
        if !parts.iter().any(known) {
            parts.push(text);
        }
    }
    parts.join(": ")
}
