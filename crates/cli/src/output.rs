//! Standard output for data. A reader that closed the pipe (`ledger sql … | head`) only stops
//! the output: what is left has no reader, and the command goes on and exits as it would have
//! (an edit is still written). Any other failure to write stdout ends the process with exit
//! code 2, as an unwritable result must.

use std::fmt::Arguments;
use std::io::Write;

/// Writes `args` (and a newline when `newline`) to stdout.
pub fn write(args: Arguments<'_>, newline: bool) {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| {
            if newline {
                out.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| out.flush());
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
