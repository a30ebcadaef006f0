//! The writer's lock on a graph folder: one process at a time writes a new version (and prunes
//! parts and old versions); readers never take it.

use crate::{Result, StoreError, io_err};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::Path;

/// An exclusive lock on a graph folder (`GRAPH/.lock`, an advisory `flock`), released when
/// dropped or when the process dies, however it dies.
#[derive(Debug)]
pub struct GraphLock {
    _file: File,
}

impl GraphLock {
    /// Locks `graph` (created if missing) for writing. When another process holds the lock,
    /// waits for it if `wait` (saying so in a warning), else fails with [`StoreError::Locked`].
    pub fn acquire(graph: &Path, wait: bool) -> Result<GraphLock> {
        std::fs::create_dir_all(graph).map_err(io_err(graph))?;
        let path = graph.join(".lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err(&path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let holder = holder(&path);
                if !wait {
                    return Err(StoreError::Locked {
                        graph: graph.to_path_buf(),
                        holder,
                    });
                }
                tracing::warn!(
                    "{} is being written by another ledger process ({holder}); waiting for it to finish",
                    graph.display()
                );
                file.lock().map_err(io_err(&path))?;
            }
            Err(TryLockError::Error(e)) => return Err(io_err(&path)(e)),
        }
        // Who holds it, for the message a waiting process prints (advisory only).
        let _ = file.set_len(0).and_then(|()| {
            writeln!(
                file,
                "pid {} since {}",
                std::process::id(),
                crate::now_rfc3339()
            )
        });
        Ok(GraphLock { _file: file })
    }
}

/// What the lock file says about its holder.
fn holder(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match text.trim() {
        "" => "holder unknown".to_string(),
        t => t.to_string(),
    }
}
