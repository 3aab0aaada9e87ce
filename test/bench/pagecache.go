package main

import (
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Page cache control for the idle-RSS measurement. A process's RSS counts
// the pages of its binary it has mapped (RssFile), and how many it maps
// depends on how the binary sits in the page cache. A file written with
// large writes, as the linker writes a binary, is cached in large folios
// where the filesystem supports them (ext4 on Linux 6.18 does), and a
// fault maps the whole cached folio around the page asked for: such a
// binary ends up mapped nearly whole although the process runs a fraction
// of it. A node starting an image reads the binary from disk instead, and
// only what start-up touches, with its neighbours, is cached and mapped.
// (Read back after a drop, the binary is cached in small folios: reading
// it whole again does not give the freshly linked binary's RSS.) The
// bench measures both: a cold copy and a freshly written one.

// copyChunk is the size of each write of a copy: large, as a linker's.
const copyChunk = 1 << 20

// writeCopy copies the binary src to dst (mode 0755) with plain writes of
// copyChunk bytes (no copy_file_range, which would share or splice pages),
// so that the page cache holds dst as it holds a binary just linked.
func writeCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, make([]byte, copyChunk)); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	// Dirty pages are not dropped: written out first, a drop can follow.
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("sync %s: %w", dst, err)
	}
	return out.Close()
}

// coldCopy copies the binary src to dst and leaves none of the copy in the
// page cache, as a binary read from an image layer on a node is: a copy,
// because the original may be mapped by a process still running (the
// bench's own binary is), and mapped pages are not dropped. It returns the
// fraction of the copy's pages still cached after the drop.
func coldCopy(src, dst string) (float64, error) {
	if err := writeCopy(src, dst); err != nil {
		return 0, err
	}
	return dropCached(dst)
}

// warmCopy copies the binary src to dst and leaves the copy in the page
// cache as written, as a binary just linked is. It returns the fraction of
// the copy's pages cached.
func warmCopy(src, dst string) (float64, error) {
	if err := writeCopy(src, dst); err != nil {
		return 0, err
	}
	f, err := os.Open(dst)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return cachedFraction(f)
}

// dropCached asks the kernel to drop path's clean, unmapped pages from the
// page cache (no privilege needed) and returns the fraction still cached.
func dropCached(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, fmt.Errorf("posix_fadvise(DONTNEED) %s: %w", path, err)
	}
	return cachedFraction(f)
}

// cachedFraction is the share of f's pages in the page cache (mincore on
// a mapping of it, which faults nothing in).
func cachedFraction(f *os.File) (float64, error) {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	// x/sys/unix has no wrapper for mincore(2).
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, fmt.Errorf("mincore %s: %w", f.Name(), errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return float64(n) / float64(len(vec)), nil
}
