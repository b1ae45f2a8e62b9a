package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browser is one headless Chromium tab, driven over the DevTools
// protocol, that records every console error, uncaught exception and
// failed load the pages cause.
type browser struct {
	t     *testing.T
	ctx   context.Context // a chromedp context that has run once
	shots string          // where screenshots go

	mu     sync.Mutex // guards errors: the tab's reader goroutine appends
	errors []string
}

// needChromium returns Debian's chromium, skipping the test where it is
// missing, except on CI (CI set), where make test-deps has installed it.
func needChromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err == nil {
		return path
	}
	msg := "chromium not found: install the Debian package chromium (make test-deps does)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// shotsDir is where a test's screenshots go: $CONSOLE_SHOTS/<test> when
// set, else <temp dir>/minikafka-console/<test>, which outlives the test
// so the pictures can be looked at.
func shotsDir(t *testing.T) string {
	base := os.Getenv("CONSOLE_SHOTS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "minikafka-console")
	}
	dir := filepath.Join(base, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := needChromium(t)
	b := &browser{t: t, shots: shotsDir(t)}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true))...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser; its context must not expire.
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, log.Enable, cdp.Empty{})
		return err
	}))
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	b.ctx = ctx
	return b
}

// listen runs on the tab's reader goroutine: it only records.
func (b *browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			msg = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
		}
	case *runtime.EventExceptionThrown:
		msg = "uncaught: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			msg = fmt.Sprintf("log %s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	}
	if msg != "" {
		b.mu.Lock()
		b.errors = append(b.errors, msg)
		b.mu.Unlock()
	}
}

// takeErrors returns the errors recorded since the last call.
func (b *browser) takeErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.errors
	b.errors = nil
	return out
}

// open loads url and waits until the page named page has rendered its
// data (body[data-page][data-state=ready]).
func (b *browser) open(url, page string) { b.t.Helper(); b.openIn(url, page, "ready") }

// openIn loads url and waits until the page named page is in state
// (ready, or error when the API refused it).
func (b *browser) openIn(url, page, state string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	sel := fmt.Sprintf(`body[data-page=%q][data-state=%q]`, page, state)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(sel))); err != nil {
		got, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.dataset.page + "/" + document.body.dataset.state + ": " + document.getElementById("view").innerText`))
		b.t.Fatalf("open %s: page %s not %s: %v (%s)", url, page, state, err, got)
	}
}

// openUntil opens url until cond holds of the page shown, for up to 30
// s; the caller then checks what it needs, with the last page shown.
func (b *browser) openUntil(url, page string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.open(url, page)
		if cond() || time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// do runs steps within 30 s.
func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

// texts evaluates a JavaScript expression giving strings.
func (b *browser) texts(js string) []string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return out
}

// cells are the texts of the cells of column col (0-based) of the rows
// of the table with id, in order.
func (b *browser) cells(id string, col int) []string {
	return b.texts(fmt.Sprintf(`[...document.querySelectorAll("#%s tbody tr:not(.empty)")].map(r => r.cells[%d].innerText)`, id, col))
}

// shot writes a full-page screenshot of the page shown as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	// MINIKAFKA_UPDATE_DOCS=1 refreshes the pictures docs/console.md shows.
	if doc := docShots[b.t.Name()+"/"+name]; doc != "" && os.Getenv("MINIKAFKA_UPDATE_DOCS") != "" {
		if err := os.WriteFile(filepath.Join("..", "docs", doc), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
}

// docShots are the screenshots docs/console.md shows, by test and name.
var docShots = map[string]string{
	"TestConsolePagesInChromium/overview": "console-overview.png",
	"TestConsolePagesInChromium/messages": "console-messages.png",
}

// noErrors fails the test if the pages caused console errors since the
// last look.
func (b *browser) noErrors(page string) {
	b.t.Helper()
	if errs := b.takeErrors(); len(errs) > 0 {
		b.t.Errorf("page %s: console errors:\n%s", page, strings.Join(errs, "\n"))
	}
}
