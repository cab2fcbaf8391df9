package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// BodyCheck checks a response body as it streams (openai.AnswerCheck is the
// balancer's).
type BodyCheck interface {
	// Check consumes the next body bytes and returns how many are
	// well-formed, with an error at the first that is not.
	Check(p []byte) (int, error)
	// Decided reports whether the bytes checked so far show a well-formed
	// start.
	Decided() bool
}

// ErrBodyEnded is the error of a body that ended before its check could
// accept its start (an empty 200, or white space only).
var ErrBodyEnded = errors.New("response body ended before a well-formed start")

// Peek reads the first bytes of resp's body, before anything of the
// response goes to the client, until check accepts its start. It reads only
// what the upstream has sent: the first read, and more only while the bytes
// so far cannot decide (a stream's first field name split over reads). On
// success resp.Body is replaced by one that returns those bytes first and
// runs check over the rest, failing at the first malformed byte (Stream then
// writes the well-formed bytes before it and returns the error). On failure
// (the check's error, ErrBodyEnded, or a read error) nothing was written
// anywhere; the caller closes resp.Body.
func Peek(resp *http.Response, check BodyCheck) error {
	cb := &checkedBody{rc: resp.Body, check: check, bp: bufPool.Get().(*[]byte)}
	buf := *cb.bp
	n := 0
	var rerr error
	for !check.Decided() && n < len(buf) {
		k, err := cb.rc.Read(buf[n:])
		if k > 0 {
			if _, cerr := check.Check(buf[n : n+k]); cerr != nil {
				cb.release()
				return cerr
			}
			n += k
		}
		if err != nil {
			rerr = err
			break
		}
	}
	if !check.Decided() && n < len(buf) { // the body ended or broke first
		cb.release()
		if rerr == io.EOF {
			return ErrBodyEnded
		}
		return fmt.Errorf("read upstream body: %w", rerr)
	}
	cb.head, cb.headErr = buf[:n], rerr
	resp.Body = cb
	return nil
}

// checkedBody returns the bytes Peek read, then the rest of the body through
// its check.
type checkedBody struct {
	rc      io.ReadCloser
	check   BodyCheck
	bp      *[]byte // the pooled buffer head lives in (nil once released)
	head    []byte  // read and checked by Peek, not yet returned
	headErr error   // the read error that came with head (io.EOF: the body ended)
	err     error   // the check's error, returned from then on
}

func (c *checkedBody) Read(p []byte) (int, error) {
	if c.bp != nil {
		n := copy(p, c.head)
		c.head = c.head[n:]
		if len(c.head) > 0 {
			return n, nil
		}
		c.release()
		return n, c.headErr
	}
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.rc.Read(p)
	if n > 0 {
		if k, cerr := c.check.Check(p[:n]); cerr != nil {
			c.err = cerr
			return k, cerr
		}
	}
	return n, err
}

func (c *checkedBody) Close() error {
	c.release()
	return c.rc.Close()
}

// release returns the head's buffer to the pool.
func (c *checkedBody) release() {
	if c.bp != nil {
		bufPool.Put(c.bp)
		c.bp, c.head = nil, nil
	}
}
