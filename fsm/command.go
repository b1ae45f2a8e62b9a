package fsm

import (
	"errors"
	"fmt"
)

// CmdType is the first byte of every command in a partition's Raft log.
// The enum only ever grows at the end: a command format, once shipped, is
// read forever.
type CmdType uint8

const (
	// cmdInvalid is never written; a zero byte means a corrupt entry.
	cmdInvalid CmdType = iota
	// CmdProduce carries one Kafka v2 RecordBatch exactly as the producer
	// sent it: [CmdProduce][batch bytes...]. The FSM assigns its offsets.
	CmdProduce
	// CmdNoop changes nothing but the applied index: [CmdNoop]. A new
	// leader proposes it to learn which entries are committed.
	CmdNoop
)

func (c CmdType) String() string {
	switch c {
	case CmdProduce:
		return "produce"
	case CmdNoop:
		return "noop"
	}
	return fmt.Sprintf("cmd(%d)", uint8(c))
}

// ErrUnknownCommand means an entry's type byte is one this build does not
// know; it comes from a newer node or a corrupt log.
var ErrUnknownCommand = errors.New("fsm: unknown command type")

// ErrEmptyCommand means an entry with no bytes at all.
var ErrEmptyCommand = errors.New("fsm: empty command")

// EncodeProduce returns the command that appends batch.
func EncodeProduce(batch []byte) []byte {
	cmd := make([]byte, 1+len(batch))
	cmd[0] = byte(CmdProduce)
	copy(cmd[1:], batch)
	return cmd
}

// EncodeNoop returns the no-op command.
func EncodeNoop() []byte { return []byte{byte(CmdNoop)} }

// DecodeCommand splits a command into its type and body. The body aliases
// data.
func DecodeCommand(data []byte) (CmdType, []byte, error) {
	if len(data) == 0 {
		return cmdInvalid, nil, ErrEmptyCommand
	}
	t := CmdType(data[0])
	switch t {
	case CmdProduce, CmdNoop:
		return t, data[1:], nil
	}
	return t, nil, fmt.Errorf("%w: %d", ErrUnknownCommand, data[0])
}
