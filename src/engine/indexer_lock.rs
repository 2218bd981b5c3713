//! Which processes are indexing a data directory, so that one opening it does not take
//! another's running files for the leftovers of a crash.
//!
//! A process indexing holds a shared `flock` on `DATA_DIR/indexing.lock` for as long
//! as it runs the queue. A process that opens the directory requeues the rows left
//! `running` only if it can take that lock exclusively, that is when nobody is
//! indexing: a killed or crashed process holds no lock (the kernel drops it with the
//! process), a live one does. So `quire queue` or `quire docs` run beside `quire
//! index` leave its files alone.

use std::fs::File;
use std::path::Path;

use crate::{Error, Result};

/// Held while indexing (dropped: released).
pub struct Indexing(#[allow(dead_code)] File);

fn open(dir: &Path) -> Result<File> {
    let path = dir.join("indexing.lock");
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))
}

#[cfg(unix)]
fn flock(f: &File, op: libc::c_int) -> bool {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: a valid open descriptor and a flock operation.
        let r = unsafe { libc::flock(f.as_raw_fd(), op) };
        if r == 0 {
            return true;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Mark this process as indexing `dir` (a shared lock: other processes may index too).
pub fn indexing(dir: &Path) -> Result<Indexing> {
    let f = open(dir)?;
    #[cfg(unix)]
    flock(&f, libc::LOCK_SH);
    Ok(Indexing(f))
}

/// Whether no process is indexing `dir` now (checked by taking the lock exclusively,
/// and letting it go).
pub fn nobody_indexing(dir: &Path) -> Result<bool> {
    let f = open(dir)?;
    #[cfg(unix)]
    {
        Ok(flock(&f, libc::LOCK_EX | libc::LOCK_NB))
    }
    #[cfg(not(unix))]
    {
        drop(f);
        Ok(true)
    }
}
