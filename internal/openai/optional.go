package openai

import (
	"bytes"
	"encoding/json"
)

// Optional is a JSON field that is absent, null, or a value. With the
// `omitzero` tag option an absent Optional is left out of the encoding while a
// null one is written as null, which is how pydantic's exclude_unset tells a
// field set to None from a field never set.
type Optional[T any] struct {
	set  bool
	null bool
	v    T
}

// Some returns a present, non-null Optional.
func Some[T any](v T) Optional[T] { return Optional[T]{set: true, v: v} }

// Null returns a present Optional whose value is null.
func Null[T any]() Optional[T] { return Optional[T]{set: true, null: true} }

// IsZero reports whether the field is absent.
func (o Optional[T]) IsZero() bool { return !o.set }

// IsNull reports whether the field is present and null.
func (o Optional[T]) IsNull() bool { return o.set && o.null }

// Get returns the value and whether it is present and not null.
func (o Optional[T]) Get() (T, bool) { return o.v, o.set && !o.null }

// MarshalJSON writes null or the value.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.set || o.null {
		return []byte("null"), nil
	}
	return json.Marshal(o.v)
}

// UnmarshalJSON marks the field present, and null for a JSON null.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.null = true
		var zero T
		o.v = zero
		return nil
	}
	o.null = false
	return json.Unmarshal(b, &o.v)
}
