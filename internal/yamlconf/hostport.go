package yamlconf

import (
	"net"
	"strconv"
	"strings"
)

// IsHostPort reports whether s is a config file's host:port: a host free of
// spaces and slashes (empty means every address) and a port in [0, 65535].
func IsHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || strings.ContainsAny(host, " /") {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 0 && n <= 65535
}
