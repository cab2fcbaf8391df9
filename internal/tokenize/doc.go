// Package tokenize computes a request's prompt token ids exactly as the
// engine serving it will, so the balancer can hash the prompt's KV blocks
// and ask each replica how much of it is cached.
//
// A Model is loaded from a model directory (tokenizer.json,
// tokenizer_config.json and a chat template, found the way transformers and
// vLLM find them) or from "builtin:sim", the simulator's tokenizer. Chat
// renders an OpenAI chat request with the model's Jinja chat template
// (github.com/ardanlabs/jinja, fed ordered values so tool schemas keep their
// key order) after vLLM's request preparation: content parts flattened or
// wrapped according to the template, tool-call arguments parsed, tools
// dumped as vLLM's models dump them, chat_template_kwargs filtered to what
// the template can use, add_generation_prompt, continue_final_message and
// documents. The text is then encoded without special tokens (chat) or with
// them (completions) by the Hugging Face tokenizer in package hf.
//
// A caller that also needs fields of the body (the balancer reads model and
// cache_salt) decodes it once with DecodeBody, reads them with Body.String,
// and tokenizes the same decoded form with ChatBody or CompletionBody; Chat
// and Completion are those steps for raw bytes.
//
// The tokenizer caches the ids of repeated prompt pieces (the text between
// special tokens: a shared system prompt, a tool list, a document) in a
// byte-bounded LRU (Options.CacheBytes), exported as metrics by Load.
//
// Pool bounds the CPU spent tokenizing: a fixed number of requests at once,
// a short wait limit and a size limit, with typed errors (ErrWaitTimeout,
// ErrTooLarge, ErrQueueFull) so a request that cannot be tokenized in time is
// routed without a prediction and counted by reason.
//
// Golden tests compare rendered text and ids with Python Jinja2 configured
// as transformers configures it and with the Rust tokenizers, for Llama 3.1
// and 3, Qwen3, Mistral, Gemma 3 and DeepSeek V3, 520 requests each
// (scripts/chat-goldens writes the goldens; docs/chat-templates.md
// describes them).
package tokenize
