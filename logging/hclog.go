package logging

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// HCLog adapts l to hclog.Logger for raft and raft-boltdb. Messages below
// min are dropped; name becomes the "logger" attribute.
func HCLog(l *slog.Logger, name string, min slog.Level) hclog.Logger {
	return HCLogRelevel(l, name, min, nil)
}

// Relevel gives a line's level from the level its library chose, its
// message and its arguments (for one that logs another node's state as
// its own error).
type Relevel func(level slog.Level, msg string, args []any) slog.Level

// HCLogRelevel is HCLog with each line's level passed through relevel
// (nil: kept), before min applies.
func HCLogRelevel(l *slog.Logger, name string, min slog.Level, relevel Relevel) hclog.Logger {
	a := &hcAdapter{base: l, min: min, name: name, relevel: relevel}
	a.l = a.base
	if name != "" {
		a.l = a.base.With("logger", name)
	}
	return a
}

// hcAdapter is immutable after construction; With and Named return copies.
type hcAdapter struct {
	base    *slog.Logger // logger without the name attribute
	l       *slog.Logger // base with name and implied args
	min     slog.Level
	name    string
	implied []any
	relevel Relevel // nil: levels as logged
}

var _ hclog.Logger = (*hcAdapter)(nil)

func toSlog(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Info, hclog.NoLevel, hclog.DefaultLevel:
		return slog.LevelInfo
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return LevelOff
	}
}

func (a *hcAdapter) enabled(level slog.Level) bool {
	return level >= a.min && a.l.Enabled(context.Background(), level)
}

func (a *hcAdapter) Log(level hclog.Level, msg string, args ...any) {
	l := toSlog(level)
	if a.relevel != nil && l != LevelOff {
		l = a.relevel(l, msg, args)
	}
	if a.enabled(l) {
		a.l.Log(context.Background(), l, msg, args...)
	}
}
func (a *hcAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hcAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hcAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hcAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hcAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }
func (a *hcAdapter) IsTrace() bool                 { return a.enabled(slog.LevelDebug) }
func (a *hcAdapter) IsDebug() bool                 { return a.enabled(slog.LevelDebug) }
func (a *hcAdapter) IsInfo() bool                  { return a.enabled(slog.LevelInfo) }
func (a *hcAdapter) IsWarn() bool                  { return a.enabled(slog.LevelWarn) }
func (a *hcAdapter) IsError() bool                 { return a.enabled(slog.LevelError) }
func (a *hcAdapter) ImpliedArgs() []any            { return a.implied }
func (a *hcAdapter) Name() string                  { return a.name }

func (a *hcAdapter) With(args ...any) hclog.Logger {
	c := *a
	c.implied = append(append([]any(nil), a.implied...), args...)
	c.l = a.l.With(args...)
	return &c
}

func (a *hcAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.ResetNamed(name)
}

func (a *hcAdapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	c.l = a.base.With("logger", name).With(a.implied...)
	return &c
}

// SetLevel is a no-op: the level belongs to the slog handler and min.
func (a *hcAdapter) SetLevel(hclog.Level) {}

func (a *hcAdapter) GetLevel() hclog.Level {
	switch {
	case a.enabled(slog.LevelDebug):
		return hclog.Debug
	case a.enabled(slog.LevelInfo):
		return hclog.Info
	case a.enabled(slog.LevelWarn):
		return hclog.Warn
	case a.enabled(slog.LevelError):
		return hclog.Error
	}
	return hclog.Off
}

func (a *hcAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return StdLog(a.l, a.min)
}

func (a *hcAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &levelWriter{l: a.l, min: a.min}
}
