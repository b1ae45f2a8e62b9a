package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how far the runs are: a progress bar on a terminal, one
// line per step otherwise (a log file or CI gets no carriage-return noise).
type progress struct {
	bar   *progressbar.ProgressBar // nil when w is not a terminal
	w     io.Writer
	start time.Time
}

func newProgress(w io.Writer, total int64) *progress {
	p := &progress{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionFullWidth())
	}
	return p
}

// step names what is happening now.
func (p *progress) step(what string) {
	if p.bar != nil {
		p.bar.Describe(what)
		return
	}
	fmt.Fprintf(p.w, "bench: [%5.1fs] %s\n", time.Since(p.start).Seconds(), what)
}

// set moves the bar to n units done.
func (p *progress) set(n int64) {
	if p.bar != nil {
		_ = p.bar.Set64(n)
	}
}

// note prints a message without garbling the bar.
func (p *progress) note(format string, a ...any) {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintf(p.w, "bench: "+format+"\n", a...)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
	p.bar = nil
}
