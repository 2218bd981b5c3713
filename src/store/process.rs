//! Which process took a queue row, told apart from any later process with the same
//! pid: `PID:START`, START being when the process started (on Linux, its start time
//! in clock ticks after boot, from `/proc/PID/stat`). A row whose process is gone —
//! killed, crashed, or its pid now another process's — waits again when the index is
//! opened ([`crate::store::Queue::requeue_interrupted`]).
//!
//! (A lock file held while indexing told this before, but a child process forked by
//! the indexer holds the lock until it runs `exec`: a kill at that moment left the
//! next opener thinking the dead indexer alive, and its files `running` for good.)

/// This process, as a queue row names it.
pub fn this() -> String {
    let pid = std::process::id();
    format!("{pid}:{}", start_of(pid).unwrap_or(0))
}

/// Whether the process named `owner` (as [`this`] writes it) is still running. A
/// name that does not parse is a process gone.
pub fn alive(owner: &str) -> bool {
    let Some((pid, start)) = owner.split_once(':') else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    if pid == std::process::id() {
        return start_of(pid).unwrap_or(0) == start;
    }
    running(pid) && start_of(pid).unwrap_or(0) == start
}

/// When `pid` started (Linux: clock ticks after boot), `None` where that cannot be
/// read (another system, or the process is gone or a zombie).
#[cfg(target_os = "linux")]
fn start_of(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "PID (COMM) STATE PPID ..." where COMM may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (the state); the start time is field 22.
    if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

#[cfg(not(target_os = "linux"))]
fn start_of(_pid: u32) -> Option<u64> {
    None
}

/// Whether a process `pid` exists (and, on Linux, is not a zombie).
#[cfg(target_os = "linux")]
fn running(pid: u32) -> bool {
    start_of(pid).is_some()
}

#[cfg(all(unix, not(target_os = "linux")))]
fn running(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn running(_pid: u32) -> bool {
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_finished_child_is_not() {
        assert!(alive(&this()));
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let name = format!("{}:{}", child.id(), start_of(child.id()).unwrap_or(0));
        assert!(alive(&name));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!alive(&name));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_pid_with_another_start_is_another_process() {
        let pid = std::process::id();
        let start = start_of(pid).unwrap();
        assert!(start > 0);
        assert!(!alive(&format!("{pid}:{}", start + 1)));
    }

    #[test]
    fn a_name_that_does_not_parse_is_gone() {
        for bad in ["", "12", "x:1", "1:y", ":"] {
            assert!(!alive(bad), "{bad}");
        }
    }
}
