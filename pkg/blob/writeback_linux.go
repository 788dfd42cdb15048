//go:build linux && (amd64 || arm64)

package blob

import (
	"os"
	"syscall"
)

// startWriteback asks Linux to start writing bytes [off, off+n) of f to disk without
// waiting for them (sync_file_range(2) with SYNC_FILE_RANGE_WRITE). It is a hint: if it
// fails, the final fsync does the work.
func startWriteback(f *os.File, off, n int64) {
	const syncFileRangeWrite = 2
	if c, err := f.SyscallConn(); err == nil {
		c.Control(func(fd uintptr) {
			syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, fd, uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
		})
	}
}
