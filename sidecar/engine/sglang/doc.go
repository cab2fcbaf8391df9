// Package sglang is the engine adapter for SGLang: its KV-event payloads
// (vLLM's array-era layout, where element 7 of BlockStoredWithMetadata is a
// {cache_salt} map, hashes are signed int64 and media are GPU, CPU_PINNED,
// DISK and EXTERNAL) and its Prometheus metric names. See docs/engines.md#sglang.
package sglang
