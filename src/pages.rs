//! Memory-page advice for large buffers: a buffer of many MiB filled once would otherwise take a
//! page fault every 4 KiB, which makes the time per byte of a 32 MiB frame grow well past that of
//! a 1 MiB one.

/// Buffers from this size on are worth advising.
pub const HUGE_FROM: usize = 4 << 20;

/// Ask the kernel to back the whole 2 MiB pages inside `[start, start + len)` with transparent
/// huge pages (Linux; elsewhere, or when they are off, nothing happens). The range should be
/// memory the caller owns and has not filled yet; the advice never changes memory contents.
pub fn advise_huge(start: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = start as usize;
        let from = start.saturating_add(HUGE - 1) & !(HUGE - 1);
        let to = start.saturating_add(len) & !(HUGE - 1);
        if to > from {
            // SAFETY: MADV_HUGEPAGE only changes how the kernel backs the (whole) pages of the
            // range, never their contents or their mapping; it fails harmlessly (EINVAL,
            // ENOMEM) on ranges it cannot advise, so the result is ignored.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_keeps_contents() {
        let mut v = vec![7u8; 3 * HUGE_FROM];
        advise_huge(v.as_ptr(), v.capacity());
        v[HUGE_FROM] = 1;
        assert_eq!((v[0], v[HUGE_FROM], v[v.len() - 1]), (7, 1, 7));
        advise_huge(std::ptr::null(), 0);
    }
}
