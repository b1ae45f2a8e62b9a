package main

import "errors"

// errDataDirInUse: another process holds the data directory's lock, most
// likely another node started with the same data_dir.
var errDataDirInUse = errors.New("in use by another process")

// dataDirLock is the file in data_dir whose lock the running node holds;
// it holds that node's pid.
const dataDirLock = ".lock"
