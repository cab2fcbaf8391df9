// Package kvblock computes the router's chained block hashes: the one identity
// of a prompt prefix shared by the balancer, the sidecar and the simulator.
//
// A prompt's token ids are cut into blocks of the engine's block size; only full
// blocks are hashed. Hashes are chained, so a block's hash names its whole
// prefix:
//
//	h[0] = xxh3(seed, tokens[0:bs])
//	h[i] = xxh3(h[i-1], tokens[i*bs:(i+1)*bs])
//
// where the seed mixes the model name, the LoRA adapter and the request's
// cache_salt (see NewSeed). Token ids are hashed as little-endian uint32s.
package kvblock
