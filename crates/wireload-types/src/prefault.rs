//! Making the pages a batch is about to write resident in one system call.
//!
//! A load writes about as many bytes of fresh memory as its input holds, and on Linux
//! each new 4 KiB page costs a page fault on its first write: a trap, the kernel zeroing
//! the page, the return. `madvise(MADV_POPULATE_WRITE)` (Linux 5.14) maps a whole range
//! in one call; a batch's buffers then fill without a fault per page. Elsewhere, and on
//! older kernels, [`prefault`] does nothing and the pages fault in as before.

use std::mem::MaybeUninit;

/// Maps the pages under the first `count` slots of `spare` (at most all: memory about to
/// be written) in one system call; contents are unchanged. A hint: does nothing where the
/// system lacks the call.
#[inline]
pub(crate) fn prefault<T>(spare: &mut [MaybeUninit<T>], count: usize) {
    let count = count.min(spare.len());
    let spare = &mut spare[..count];
    let bytes = std::mem::size_of_val(spare);
    // One page or less is one fault at most: not worth a system call.
    if bytes > PAGE {
        populate(spare.as_mut_ptr().cast(), bytes);
    }
}

/// The smallest page size of the systems this runs on; a larger page only makes the
/// rounded-down start of [`populate`] unaligned, which the call refuses (a no-op).
const PAGE: usize = 4096;

/// Set when the kernel refuses the call (before 5.14): it is not tried again.
#[cfg(target_os = "linux")]
static UNSUPPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[cfg(target_os = "linux")]
#[cold]
#[inline(never)]
fn populate(start: *mut u8, bytes: usize) {
    use std::sync::atomic::Ordering::Relaxed;
    if UNSUPPORTED.load(Relaxed) {
        return;
    }
    let first_page = start as usize & !(PAGE - 1);
    let len = start as usize + bytes - first_page;
    // SAFETY: MADV_POPULATE_WRITE only maps pages (as a write to each would, without
    // writing): no memory changes. The range runs from the start of the page holding
    // `start` to the end of `spare`, all within pages of the allocation `spare` belongs
    // to, which are mapped.
    let ret = unsafe {
        libc::madvise(
            first_page as *mut libc::c_void,
            len,
            libc::MADV_POPULATE_WRITE,
        )
    };
    if ret != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        UNSUPPORTED.store(true, Relaxed);
    }
}

#[cfg(not(target_os = "linux"))]
fn populate(_start: *mut u8, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefaulting_keeps_the_contents_and_the_memory_stays_writable() {
        let mut v: Vec<u64> = Vec::with_capacity(1 << 20);
        v.extend(0..1000);
        prefault(v.spare_capacity_mut(), usize::MAX);
        assert!(
            v.iter().copied().eq(0..1000),
            "the written values are unchanged"
        );
        v.extend(1000..(1 << 20));
        assert!(v.iter().copied().eq(0..(1 << 20)));
        // Less than a page, and an empty slice: nothing to do.
        let mut small: Vec<u8> = Vec::with_capacity(100);
        prefault(small.spare_capacity_mut(), 100);
        prefault(small.spare_capacity_mut(), 0);
        small.push(1);
        assert_eq!(small, [1]);
    }

    /// How many of the pages of `bytes` from `start` (page-aligned) are resident.
    #[cfg(target_os = "linux")]
    fn resident_pages(start: *const u8, bytes: usize) -> usize {
        let mut flags = vec![0u8; bytes.div_ceil(PAGE)];
        // SAFETY: `start` is page-aligned and the range is mapped (the caller's
        // allocation); `flags` has one byte per page of it.
        let ret = unsafe { libc::mincore(start as *mut libc::c_void, bytes, flags.as_mut_ptr()) };
        assert_eq!(ret, 0, "mincore: {}", std::io::Error::last_os_error());
        flags.iter().filter(|&&f| f & 1 != 0).count()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn prefaulted_pages_are_resident_before_the_first_write() {
        use std::sync::atomic::Ordering::Relaxed;
        // 64 MiB of fresh memory (mapped apart by the allocator): no page is resident
        // until written or prefaulted.
        let mut v: Vec<u8> = Vec::with_capacity(64 << 20);
        let start = (v.as_ptr() as usize).next_multiple_of(PAGE);
        let pages = (32 << 20) / PAGE;
        let before = resident_pages(start as *const u8, pages * PAGE);
        prefault(v.spare_capacity_mut(), usize::MAX);
        let after = resident_pages(start as *const u8, pages * PAGE);
        if UNSUPPORTED.load(Relaxed) {
            assert_eq!(after, before, "an unsupported call maps nothing");
        } else {
            assert!(
                before < pages / 2,
                "{before} of {pages} pages resident before"
            );
            assert_eq!(after, pages, "every page is resident after");
        }
        v.push(1);
        assert_eq!(v, [1]);
    }
}
