package openai

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

// Event is one server-sent event.
type Event struct {
	// Type is the event field ("" when the stream did not name one, which
	// means "message").
	Type string
	// Data is the data lines joined with "\n".
	Data string
	// ID is the last event id seen (it persists across events, as the
	// standard says).
	ID string
}

// Done is the data of the last event of an OpenAI stream.
const Done = "[DONE]"

// Decoder decodes a server-sent-events stream incrementally: Feed it bytes
// as they arrive, split anywhere (even inside a CRLF or a UTF-8 sequence),
// and it yields the same events as if it had the whole stream. It follows the
// HTML standard's parsing rules (CR, LF and CRLF line ends, comments, a
// leading BOM, one optional space after the colon, events dispatched on a
// blank line and only with data). A Decoder is not safe for concurrent use.
type Decoder struct {
	line    []byte
	started bool // past the optional BOM
	bom     int  // BOM bytes matched so far
	afterCR bool // the previous byte was a CR ending a line
	data    []byte
	hasData bool
	evType  string
	lastID  string
	maxLine int
}

// ErrLineTooLong is returned when a line exceeds the decoder's limit.
var ErrLineTooLong = errors.New("sse: line too long")

// NewDecoder returns a decoder that rejects lines longer than maxLine bytes
// (<= 0 means 16 MiB).
func NewDecoder(maxLine int) *Decoder {
	if maxLine <= 0 {
		maxLine = 16 << 20
	}
	return &Decoder{maxLine: maxLine}
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// Feed consumes p and appends the completed events to dst.
func (d *Decoder) Feed(dst []Event, p []byte) ([]Event, error) {
	if d.maxLine == 0 {
		d.maxLine = 16 << 20
	}
	for len(p) > 0 {
		if !d.started {
			// Match a BOM across chunk boundaries.
			for len(p) > 0 && d.bom < len(bom) && p[0] == bom[d.bom] {
				d.bom++
				p = p[1:]
			}
			if d.bom == len(bom) || len(p) > 0 {
				if d.bom > 0 && d.bom < len(bom) { // a partial BOM was data
					d.line = append(d.line, bom[:d.bom]...)
				}
				d.started = true
			}
			continue
		}
		if d.afterCR {
			d.afterCR = false
			if p[0] == '\n' {
				p = p[1:]
				continue
			}
		}
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			if len(d.line)+len(p) > d.maxLine {
				return dst, ErrLineTooLong
			}
			d.line = append(d.line, p...)
			return dst, nil
		}
		if len(d.line)+i > d.maxLine {
			return dst, ErrLineTooLong
		}
		d.line = append(d.line, p[:i]...)
		if p[i] == '\r' {
			d.afterCR = true
		}
		p = p[i+1:]
		dst = d.processLine(dst)
		d.line = d.line[:0]
	}
	return dst, nil
}

func (d *Decoder) processLine(dst []Event) []Event {
	line := d.line
	if len(line) == 0 {
		if d.hasData {
			dst = append(dst, Event{Type: d.evType, Data: string(d.data), ID: d.lastID})
		}
		d.data = d.data[:0]
		d.hasData = false
		d.evType = ""
		return dst
	}
	if line[0] == ':' {
		return dst
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if d.hasData {
			d.data = append(d.data, '\n')
		}
		d.data = append(d.data, value...)
		d.hasData = true
	case "event":
		d.evType = string(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			d.lastID = string(value)
		}
	}
	return dst
}

// Reader reads events from an io.Reader.
type Reader struct {
	r       io.Reader
	dec     *Decoder
	pending []Event
	buf     []byte
	err     error
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r, dec: NewDecoder(0), buf: make([]byte, 32<<10)}
}

// Next returns the next event, or io.EOF at the end of the stream (an
// unterminated last event is dropped, as the standard says).
func (r *Reader) Next() (Event, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return Event{}, r.err
		}
		n, err := r.r.Read(r.buf)
		if n > 0 {
			var derr error
			r.pending, derr = r.dec.Feed(r.pending, r.buf[:n])
			if derr != nil {
				r.err = derr
			}
		}
		if err != nil && r.err == nil {
			r.err = err
		}
	}
	ev := r.pending[0]
	r.pending = r.pending[1:]
	return ev, nil
}

// Writer writes server-sent events to an HTTP response, flushing after each
// event so a client sees every chunk at once.
type Writer struct {
	w   io.Writer
	f   http.Flusher
	buf []byte
}

// NewWriter returns a Writer over w; it flushes if w is an http.Flusher.
func NewWriter(w io.Writer) *Writer {
	f, _ := w.(http.Flusher)
	return &Writer{w: w, f: f}
}

// WriteData writes one event whose data is data ("data: <data>\n\n"); a data
// with line breaks becomes several data lines.
func (w *Writer) WriteData(data []byte) error {
	w.buf = AppendData(w.buf[:0], data)
	if _, err := w.w.Write(w.buf); err != nil {
		return err
	}
	if w.f != nil {
		w.f.Flush()
	}
	return nil
}

// WriteDone writes "data: [DONE]\n\n".
func (w *Writer) WriteDone() error { return w.WriteData([]byte(Done)) }

// AppendData appends the encoding of one data-only event to dst.
func AppendData(dst, data []byte) []byte {
	for {
		dst = append(dst, "data: "...)
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			dst = append(dst, data...)
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(dst, '\n', '\n')
}
