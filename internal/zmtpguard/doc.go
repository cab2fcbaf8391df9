// Package zmtpguard bounds what a ZMTP peer can make go-zeromq/zmq4 allocate.
//
// zmq4 (v0.17.0, conn.go (*Conn).read) allocates a frame's body with the
// length its header declares before reading it, so one 9-byte header that
// claims 2^40 bytes ends the process with "runtime: out of memory". zmq4 has
// no option for a maximum message size (libzmq's ZMQ_MAXMSGSIZE), but it
// hands every connection to a registered transport: this package registers
// transports that are plain TCP and unix sockets whose connections parse the
// ZMTP 3.x stream as it is read (the 64-byte greeting, then frames: a flags
// byte, a 1- or 8-byte length, the body) and fail the connection when a
// message would exceed its limit, before zmq4 sees the length. The same
// connections bound the handshake by a deadline, so a peer that connects and
// stays silent cannot block zmq4's accept loop (which greets each new
// connection before accepting the next) or a Dial.
//
// Use it by naming the endpoint through Endpoint ("tcp://h:p" becomes
// "inferrail-zmtp-tcp://h:p") and passing the limits in the socket's
// context (WithLimits): zmq4 hands that context to the transport. Callers
// with their own transport wrap its connections with Wrap. See
// docs/adr/0010-zmtp-frame-limit.md.
package zmtpguard
