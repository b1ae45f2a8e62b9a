package vfs

// writeAtv writes bufs one after another at off, as one write where the
// file allows (writevAt): a batch whose header was rewritten goes out as
// the new header and the rest of the caller's bytes, without copying the
// whole batch first. Elsewhere each buffer is its own WriteAt.
func writeAtv(f File, bufs [][]byte, off int64) (int, error) {
	if n, ok, err := writevAt(f, bufs, off); ok {
		return n, err
	}
	total := 0
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		n, err := f.WriteAt(b, off+int64(total))
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// WriteAtv writes bufs one after another at off (see writeAtv). Like
// WriteAt it is not for a file opened with O_APPEND, where pwritev would
// append instead of writing at off.
func (h *Handle) WriteAtv(bufs [][]byte, off int64) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release(true)
	return writeAtv(f, bufs, off)
}
