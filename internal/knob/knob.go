// Package knob validates tuning structs: tables of fields, each with its
// name, default and bounds, so that a struct's defaults and checks are
// written once, in one table.
package knob

import (
	"fmt"
	"time"
)

// Duration is one time.Duration field: a zero value takes Def, and the
// result must be at least Min.
type Duration struct {
	Name     string
	V        *time.Duration
	Def, Min time.Duration
}

// Int is one int field: a zero value takes Def, and the result must be in
// Min..Max.
type Int struct {
	Name          string
	V             *int
	Def, Min, Max int
}

// Error names the field that is out of range.
type Error struct {
	Name string
	Msg  string
}

func (e *Error) Error() string { return e.Name + " " + e.Msg }

// Check fills the zero fields of ds and is with their defaults and
// returns the first one out of range.
func Check(ds []Duration, is []Int) error {
	for _, d := range ds {
		if *d.V == 0 {
			*d.V = d.Def
		}
		if *d.V < d.Min {
			return &Error{Name: d.Name, Msg: fmt.Sprintf("%v is below %v", *d.V, d.Min)}
		}
	}
	for _, i := range is {
		if *i.V == 0 {
			*i.V = i.Def
		}
		if *i.V < i.Min || *i.V > i.Max {
			return &Error{Name: i.Name, Msg: fmt.Sprintf("%d is not in %d..%d", *i.V, i.Min, i.Max)}
		}
	}
	return nil
}
