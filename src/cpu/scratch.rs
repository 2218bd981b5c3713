//! Buffers each thread keeps from call to call, for kernels on hot paths that would
//! otherwise allocate (and zero) the same scratch memory every time.

use std::cell::RefCell;
use std::thread::LocalKey;

/// `f` on the first `len` values of this thread's buffer `key`, grown as needed and
/// never zeroed again: `f` must write every value before it reads it. The buffer is
/// taken out while `f` runs, so a nested call on the same thread (a rayon worker
/// stealing work inside `f`) gets a fresh one instead of a panic.
pub fn with_scratch<T: Clone + Default, R>(
    key: &'static LocalKey<RefCell<Vec<T>>>,
    len: usize,
    f: impl FnOnce(&mut [T]) -> R,
) -> R {
    let mut buf = key.with(|cell| cell.take());
    if buf.len() < len {
        buf.resize(len, T::default());
    }
    let r = f(&mut buf[..len]);
    key.with(|cell| cell.replace(buf));
    r
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    thread_local! {
        static BUF: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    }

    #[test]
    fn the_buffer_is_kept_and_a_nested_call_gets_its_own() {
        super::with_scratch(&BUF, 4, |b| b.copy_from_slice(&[1, 2, 3, 4]));
        super::with_scratch(&BUF, 2, |b| {
            assert_eq!(b, &[1, 2], "kept from the last call");
            super::with_scratch(&BUF, 3, |inner| assert_eq!(inner, &[0, 0, 0]));
        });
        assert_eq!(BUF.with_borrow(|b| b.len()), 4);
    }
}
