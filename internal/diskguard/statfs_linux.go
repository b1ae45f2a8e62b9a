package diskguard

import "syscall"

// Statfs reads the usage of the filesystem holding dir: its size, and the
// blocks available to an unprivileged writer (what a full disk leaves to
// root is not ours to spend).
func Statfs(dir string) (Usage, error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(dir, &s); err != nil {
		return Usage{}, err
	}
	bs := s.Bsize
	return Usage{Total: int64(s.Blocks) * bs, Free: int64(s.Bavail) * bs}, nil
}
