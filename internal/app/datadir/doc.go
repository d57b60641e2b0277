// Package datadir guards the data directory of the embedded Temporal
// server so that one process at a time opens its SQLite file, and keeps
// the server's secret there.
//
// The process that opens the directory holds an exclusive lock (flock(2))
// on LockFile in it for as long as it runs the server; the kernel releases
// it when the process exits, however it exits. Once its server answers,
// the holder publishes where it listens in InfoFile, next to the lock.
// Another process that finds the directory locked reads InfoFile (Claim
// waits for it) and either reports the holder (HeldError) or uses the
// holder's server instead of opening the file.
//
// The directory also keeps the server's secret (Key, in KeyFile), so that
// what it seals outlives a restart.
package datadir
