// Package buildinfo reports the version of the running binary.
package buildinfo

import "runtime/debug"

// version is set at link time: -ldflags "-X github.com/inferrail/inferrail/internal/buildinfo.version=v1.2.3".
var version = ""

// Version returns the binary's version: the link-time version if set, else the
// module version or VCS revision recorded by the Go toolchain, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}
