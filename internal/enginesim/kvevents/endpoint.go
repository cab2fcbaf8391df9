package kvevents

import (
	"fmt"
	"strconv"
	"strings"
)

// EndpointForRank returns the endpoint data-parallel rank uses, as vLLM's
// offset_endpoint_port does: rank 0 (or an empty endpoint) keeps it as given;
// otherwise an endpoint containing "inproc" gets the suffix "_dp<rank>", one
// containing "tcp" has the port after its last colon raised by rank, and any
// other endpoint is an error. The same offset applies to the replay endpoint.
func EndpointForRank(endpoint string, rank int) (string, error) {
	if rank < 0 {
		return "", fmt.Errorf("endpoint %q: negative data parallel rank %d", endpoint, rank)
	}
	if endpoint == "" || rank == 0 {
		return endpoint, nil
	}
	if strings.Contains(endpoint, "inproc") {
		return endpoint + "_dp" + strconv.Itoa(rank), nil
	}
	if strings.Contains(endpoint, "tcp") && strings.Contains(endpoint, ":") {
		i := strings.LastIndexByte(endpoint, ':')
		port, err := strconv.Atoi(endpoint[i+1:])
		if err != nil {
			return "", fmt.Errorf("endpoint %q: port %q is not an integer", endpoint, endpoint[i+1:])
		}
		if port+rank > 65535 {
			return "", fmt.Errorf("endpoint %q: port %d + rank %d exceeds 65535", endpoint, port, rank)
		}
		return endpoint[:i+1] + strconv.Itoa(port+rank), nil
	}
	return "", fmt.Errorf("endpoint %q: must contain 'inproc' or 'tcp' to be offset for rank %d", endpoint, rank)
}

// ShouldBind reports whether vLLM binds the PUB socket on endpoint (rather
// than connecting to it): when it contains "*" or "::", or starts with
// "ipc://" or "inproc://". Note that "tcp://0.0.0.0:5557" therefore connects.
func ShouldBind(endpoint string) bool {
	return strings.Contains(endpoint, "*") || strings.Contains(endpoint, "::") ||
		strings.HasPrefix(endpoint, "ipc://") || strings.HasPrefix(endpoint, "inproc://")
}

// listenAddress rewrites a libzmq wildcard bind address for go-zeromq/zmq4:
// "tcp://*:5557" becomes "tcp://0.0.0.0:5557", and a bare "::" host or a
// "[*]" host becomes "[::]". Other endpoints are returned unchanged.
func listenAddress(endpoint string) string {
	rest, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return endpoint
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return endpoint
	}
	host, port := rest[:i], rest[i+1:]
	switch host {
	case "*", "":
		host = "0.0.0.0"
	case "[*]", "::", "[::]":
		host = "[::]"
	}
	return "tcp://" + host + ":" + port
}
