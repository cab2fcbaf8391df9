#!/usr/bin/env python3
"""llamacpp-model.py writes a tiny random-weight Llama GGUF model for the
llama.cpp end-to-end test (make e2e-llamacpp).

    PYTHONPATH=<llama.cpp>/gguf-py python3 scripts/llamacpp-model.py TOKENIZER_DIR OUT.gguf

The vocabulary, merges, special tokens and chat template are those of
TOKENIZER_DIR (a Hugging Face tokenizer.json + tokenizer_config.json of the
Llama 3 family), so a balancer configured with the same directory computes
the token ids llama-server does. The weights are random (seeded), except
that no generated token can break a stream: every token whose bytes are not
printable ASCII (the byte-level pieces of multi-byte UTF-8 characters, and
the special tokens, EOS among them) gets a logit far below the others, so
generation always runs to max_tokens with valid UTF-8. The masking works
through hidden dimension 0: every token embedding holds a constant there,
no layer writes to it (its rows of attn_output and ffn_down are zero), so
after the final RMS norm it is a large positive number for every position;
the masked tokens' output rows are strongly negative in that dimension and
the others zero.

Needs only the gguf package of llama.cpp's source tree and numpy
(Debian's python3-numpy).
"""

import json
import sys

import numpy as np

import gguf

N_EMBD = 64
N_LAYER = 2
N_HEAD = 4
N_FF = 128
N_CTX_TRAIN = 32768
MASK_DIM_VALUE = 8.0
MASK_LOGIT_WEIGHT = -64.0


def byte_decoder():
    """GPT-2's byte-level alphabet: printable code point -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    tok_dir, out = sys.argv[1], sys.argv[2]
    with open(f"{tok_dir}/tokenizer.json", encoding="utf-8") as f:
        tj = json.load(f)
    with open(f"{tok_dir}/tokenizer_config.json", encoding="utf-8") as f:
        tc = json.load(f)
    model = tj["model"]
    if model.get("type") != "BPE":
        sys.exit(f"{tok_dir}/tokenizer.json: model type {model.get('type')!r}, want BPE")

    vocab = dict(model["vocab"])
    special = set()
    for t in tj.get("added_tokens", []):
        vocab[t["content"]] = t["id"]
        if t.get("special"):
            special.add(t["id"])
    n_vocab = max(vocab.values()) + 1
    tokens = [f"[PAD{i}]" for i in range(n_vocab)]
    types = [gguf.TokenType.UNUSED] * n_vocab
    for text, i in vocab.items():
        tokens[i] = text
        types[i] = gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]

    dec = byte_decoder()
    masked = np.zeros(n_vocab, dtype=bool)
    for i, text in enumerate(tokens):
        if types[i] != gguf.TokenType.NORMAL:
            masked[i] = True
            continue
        try:
            raw = bytes(dec[c] for c in text)
        except KeyError:
            masked[i] = True
            continue
        masked[i] = not all(0x20 <= b < 0x7F for b in raw)

    def special_id(key):
        v = tc[key]
        return vocab[v if isinstance(v, str) else v["content"]]

    bos, eos = special_id("bos_token"), special_id("eos_token")

    rng = np.random.default_rng(16)

    def rand(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = gguf.GGUFWriter(out, "llama")
    w.add_name("inferrail-e2e-tiny")
    w.add_vocab_size(n_vocab)
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    w.add_add_bos_token(True)
    if tc.get("chat_template"):
        w.add_chat_template(tc["chat_template"])

    embd = rand(n_vocab, N_EMBD, scale=1.0)
    embd[:, 0] = MASK_DIM_VALUE
    w.add_tensor("token_embd.weight", embd)
    for layer in range(N_LAYER):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(p + "attn_k.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(p + "attn_v.weight", rand(N_EMBD, N_EMBD))
        wo = rand(N_EMBD, N_EMBD)
        wo[0, :] = 0
        w.add_tensor(p + "attn_output.weight", wo)
        w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", rand(N_FF, N_EMBD))
        w.add_tensor(p + "ffn_up.weight", rand(N_FF, N_EMBD))
        down = rand(N_EMBD, N_FF)
        down[0, :] = 0
        w.add_tensor(p + "ffn_down.weight", down)
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    head = rand(n_vocab, N_EMBD, scale=1.0)
    head[:, 0] = np.where(masked, MASK_LOGIT_WEIGHT, 0.0)
    w.add_tensor("output.weight", head)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"llamacpp-model.py: wrote {out}: {n_vocab} tokens, {int(masked.sum())} masked", file=sys.stderr)


if __name__ == "__main__":
    main()
