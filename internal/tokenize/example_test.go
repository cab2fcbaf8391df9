package tokenize_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/inferrail/inferrail/internal/tokenize"
)

// The request path: tokenize a chat request within the pool's limits, and
// route without a prediction when that is not possible.
func ExamplePool_Do() {
	m, err := tokenize.Load(tokenize.SimSpec, tokenize.Options{})
	if err != nil {
		panic(err)
	}
	pool := tokenize.NewPool(tokenize.PoolConfig{Workers: 2}, nil)
	body := []byte(`{"model": "m", "messages": [{"role": "user", "content": "hi"}]}`)

	var p tokenize.Prompt
	var chatErr error
	err = pool.Do(context.Background(), len(body), func() { p, chatErr = m.Chat(body) })
	var bad *tokenize.RequestError
	switch {
	case err != nil:
		fmt.Println("route without a prediction:", tokenize.RejectReason(err))
	case errors.As(chatErr, &bad):
		fmt.Println("the engine will reject it:", bad)
	case chatErr != nil:
		fmt.Println("tokenize failed:", chatErr)
	default:
		fmt.Printf("%q: %d tokens\n", p.Text, len(p.TokenIDs))
	}
	// Output: "<|start|>user\nhi<|end|>\n<|start|>assistant\n": 11 tokens
}

// Decode the body once: read the fields the router needs, then tokenize the
// same decoded form.
func ExampleDecodeBody() {
	m, err := tokenize.Load(tokenize.SimSpec, tokenize.Options{})
	if err != nil {
		panic(err)
	}
	body := []byte(`{"model": "m", "cache_salt": "tenant-7", "messages": [{"role": "user", "content": "hi"}]}`)
	b, err := tokenize.DecodeBody(body)
	if err != nil {
		panic(err)
	}
	model, _, _ := b.String("model")
	salt, _, _ := b.String("cache_salt")
	p, err := m.ChatBody(b)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %s %d tokens\n", model, salt, len(p.TokenIDs))
	// Output: m tenant-7 11 tokens
}
