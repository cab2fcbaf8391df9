// Package openai holds the OpenAI-compatible wire formats shared by the
// simulator, the balancer and the benchmark: request types that keep every
// field they do not know (so a proxy can forward a body byte for byte and
// rewrite only "model"), response and stream-chunk types shaped like vLLM's,
// an incremental server-sent-events codec, and vLLM's and SGLang's error
// bodies.
//
// Field order and null handling follow vLLM's pydantic models (see
// vllm/entrypoints/openai/*/protocol.py): non-streaming bodies carry every
// field (null when unset), chat stream chunks carry only the fields vLLM sets
// (model_dump_json(exclude_unset=True)), and completion stream chunks carry
// every field. Optional[T] models the difference between an absent field and
// an explicit null.
package openai
