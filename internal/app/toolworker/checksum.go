package toolworker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"

	"go.temporal.io/sdk/worker"
)

// IdentifyBinary gives the Temporal SDK this executable's identity (the
// BinaryChecksum it records in each workflow's reset points) before any
// worker starts. Left to itself the SDK hashes the whole executable when
// the first worker starts: for cmd/server, which links the embedded
// Temporal server, that is over 200 MB read and hashed (about 300 ms) on
// the path of a spawned stdio server's first call. The identity here is a
// hash of what names the build as cheaply: the build information the Go
// toolchain embeds (module versions and sums, the VCS revision when
// stamped, build settings) and the executable's size and modification
// time, so that a rebuilt binary gets a new one.
func IdentifyBinary() {
	worker.SetBinaryChecksum(BinaryChecksum())
}

// BinaryChecksum is the identity IdentifyBinary gives the SDK: 32
// hexadecimal digits.
func BinaryChecksum() string {
	h := sha256.New()
	if info, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprint(h, info.String())
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			fmt.Fprint(h, exe, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
