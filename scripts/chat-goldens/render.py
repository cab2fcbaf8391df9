#!/usr/bin/env python3
"""Render golden chat requests the way vLLM + transformers do.

Reads a JSON Lines file of {"id", "request"} objects (an OpenAI chat request
each) and writes {"id", "request", "rendered"} or {"id", "request", "error"}
lines. The request preparation mirrors vLLM's chat_utils (content parts
flattened for "string" templates, wrapped for "openai" templates, tool-call
arguments parsed, tools dumped like vLLM's pydantic models, chat template
kwargs filtered to the variables the template uses) and the rendering mirrors
transformers' chat template utils (ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks, loopcontrols, a tojson that keeps key order and
supports indent, raise_exception, strftime_now, continue_final_message).

This is the reference side of the golden tests; it is written from the
documented behaviour of those projects, not copied from them. Only the
installed Jinja2 (3.1.x) is needed.

Usage: render.py --model-dir DIR [--template FILE] < requests.jsonl > rendered.jsonl
"""

import argparse
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.meta
import jinja2.nodes
import jinja2.sandbox

# Parameters of transformers' apply_chat_template that a request's
# chat_template_kwargs may always set (vLLM accepts these even when the
# template does not name them).
HF_BASE_PARAMS = {
    "conversation", "tools", "documents", "chat_template", "add_generation_prompt",
    "continue_final_message", "tokenize", "padding", "truncation", "max_length",
    "return_tensors", "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs",
}

SPECIAL_TOKEN_ATTRS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                       "cls_token", "mask_token"]


class RenderError(Exception):
    pass


def token_content(tok):
    if tok is None:
        return None
    if isinstance(tok, dict):
        return tok.get("content")
    return tok


def special_tokens_map(config):
    out = {}
    for k in SPECIAL_TOKEN_ATTRS:
        v = token_content(config.get(k))
        if v is not None:
            out[k] = v
    extra = config.get("additional_special_tokens")
    if extra:
        out["additional_special_tokens"] = [token_content(t) for t in extra]
    return out


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# --- content format detection (vLLM: a loop over message['content']) -------

def _is_var(node, name):
    return isinstance(node, jinja2.nodes.Name) and node.ctx == "load" and node.name == name


def _is_attr(node, name, key):
    if isinstance(node, jinja2.nodes.Getitem):
        return _is_var(node.node, name) and isinstance(node.arg, jinja2.nodes.Const) and node.arg.value == key
    if isinstance(node, jinja2.nodes.Getattr):
        return _is_var(node.node, name) and node.attr == key
    return False


def _var_or_elems(node, name, key=None):
    if isinstance(node, jinja2.nodes.Filter):
        return node.node is not None and _var_or_elems(node.node, name, key)
    if isinstance(node, jinja2.nodes.Test):
        return _var_or_elems(node.node, name, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return _var_or_elems(node.node, name, key)
    return _is_attr(node, name, key) if key else _is_var(node, name)


def detect_content_format(env, source):
    ast = env.parse(source)
    names = ["messages"]
    queue = ["messages"]
    while queue:
        cur = queue.pop(0)
        for a in ast.find_all(jinja2.nodes.Assign):
            if _var_or_elems(a.node, cur) and isinstance(a.target, jinja2.nodes.Name):
                if a.target.name not in names:
                    names.append(a.target.name)
                    queue.append(a.target.name)
    msg_vars = []
    for loop in ast.find_all(jinja2.nodes.For):
        if any(_var_or_elems(loop.iter, n) for n in names) and isinstance(loop.target, jinja2.nodes.Name):
            msg_vars.append(loop.target.name)
    for loop in ast.find_all(jinja2.nodes.For):
        if any(_var_or_elems(loop.iter, n, "content") for n in msg_vars):
            return "openai"
    return "string"


# --- request preparation (vLLM) ---------------------------------------------

TEXT_TYPES = ("text", "input_text", "output_text", "refusal", "thinking")


def part_text(part):
    t = part.get("type")
    if t == "thinking":
        return part.get("thinking")
    if t == "refusal":
        return part.get("refusal")
    return part.get("text")


def parse_message(msg, fmt):
    if not isinstance(msg, dict) or "role" not in msg:
        raise RenderError("message without role")
    role = msg["role"]
    content = msg.get("content")
    if content is None:
        parts = []
    elif isinstance(content, str):
        parts = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        parts = content
    else:
        raise RenderError("bad content")
    items = []
    for p in parts:
        if isinstance(p, str):
            items.append({"type": "text", "text": p} if fmt == "openai" else p)
            continue
        if not isinstance(p, dict):
            raise RenderError("bad part")
        t = p.get("type")
        if t in TEXT_TYPES:
            text = part_text(p)
            if text is None:
                continue
            if not isinstance(text, str):
                raise RenderError("bad text part")
            items.append({"type": "text", "text": text} if fmt == "openai" else text)
        else:
            raise RenderError("unsupported content part type %r" % (t,))
    out = {"role": role}
    out["content"] = items if fmt == "openai" else "\n".join(items)
    if role == "assistant":
        if msg.get("tool_calls") is not None:
            out["tool_calls"] = list(msg["tool_calls"])
        r = msg.get("reasoning")
        if r is None:
            r = msg.get("reasoning_content")
        if r is not None:
            out["reasoning"] = r
            out["reasoning_content"] = r
    elif role == "tool":
        if "tool_call_id" in msg:
            out["tool_call_id"] = msg["tool_call_id"]
        c = out.get("content")
        if isinstance(c, list):
            if not any(isinstance(i, dict) and i.get("type") != "text" for i in c):
                texts = [i.get("text", "") for i in c if isinstance(i, dict) and i.get("type") == "text"]
                out["content"] = "\n".join(texts) if texts else ""
    if isinstance(msg.get("name"), str):
        out["name"] = msg["name"]
    if isinstance(msg.get("task"), str):
        out["task"] = msg["task"]
    if role == "developer":
        out["tools"] = msg.get("tools")
    return out


def postprocess(conv):
    for m in conv:
        if m["role"] == "assistant" and "tool_calls" in m:
            tcs = m["tool_calls"]
            if not isinstance(tcs, list):
                continue
            if len(tcs) == 0:
                del m["tool_calls"]
                continue
            for item in tcs:
                fn = item["function"]
                a = fn.get("arguments")
                if isinstance(a, str):
                    try:
                        fn["arguments"] = json.loads(a)
                    except json.JSONDecodeError:
                        fn["arguments"] = {}
                elif not isinstance(a, (dict, list)):
                    fn["arguments"] = {}


def dump_tool(tool):
    # vLLM: ChatCompletionToolsParam(type="function", function=FunctionDefinition(name,
    # description=None, parameters=None), extra fields allowed).model_dump()
    fn = tool.get("function") or {}
    f = {"name": fn["name"], "description": fn.get("description"), "parameters": fn.get("parameters")}
    for k, v in fn.items():
        if k not in f:
            f[k] = v
    out = {"type": tool.get("type", "function"), "function": f}
    for k, v in tool.items():
        if k not in out:
            out[k] = v
    return out


def render_request(env, source, template_vars, specials, req):
    fmt = detect_content_format(env, source)
    conv = [parse_message(m, fmt) for m in req["messages"]]
    postprocess(conv)
    tools = None
    if req.get("tools") is not None:
        tools = [dump_tool(t) for t in req["tools"]]
    agp = req.get("add_generation_prompt", True)
    cfm = req.get("continue_final_message", False)
    if agp and cfm:
        raise RenderError("cannot set both add_generation_prompt and continue_final_message")
    kwargs = {"add_generation_prompt": agp, "continue_final_message": cfm,
              "tools": tools, "documents": req.get("documents")}
    ctk = req.get("chat_template_kwargs") or {}
    if "chat_template" in ctk or "tokenize" in ctk:
        raise RenderError("unexpected chat template kwargs")
    kwargs.update(ctk)
    accept = (template_vars | HF_BASE_PARAMS) - {"chat_template", "tokenize"}
    kwargs = {k: v for k, v in kwargs.items() if k in accept}
    # transformers.apply_chat_template
    agp = kwargs.pop("add_generation_prompt", False)
    cfm = kwargs.pop("continue_final_message", False)
    tools = kwargs.pop("tools", None)
    documents = kwargs.pop("documents", None)
    if "conversation" in kwargs:
        raise RenderError("conversation passed twice")
    for k in ("padding", "truncation", "max_length", "return_tensors",
              "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs"):
        kwargs.pop(k, None)
    if cfm and agp:
        raise RenderError("continue_final_message and add_generation_prompt are not compatible")
    template_kwargs = {**specials, **kwargs}
    tmpl = env.from_string(source)
    try:
        rendered = tmpl.render(messages=conv, tools=tools, documents=documents,
                               add_generation_prompt=agp, **template_kwargs)
    except jinja2.exceptions.TemplateError as e:
        raise RenderError("template: %s" % e)
    except TypeError as e:
        raise RenderError("template: %s" % e)
    if cfm:
        final = conv[-1]["content"]
        if isinstance(final, (list, tuple)):
            for block in reversed(final):
                if "text" in block:
                    final = block["text"]
                    break
            else:
                raise RenderError("no text to continue")
        if final.strip() not in rendered:
            raise RenderError("final message not in rendered chat")
        loc = rendered.rindex(final.strip())
        if rendered[loc:loc + len(final.lstrip())] == final:
            rendered = rendered[:loc + len(final.lstrip())]
        else:
            rendered = rendered[:loc + len(final.strip())]
    return rendered


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--template")
    args = ap.parse_args()
    with open(args.model_dir + "/tokenizer_config.json", encoding="utf-8") as f:
        config = json.load(f)
    if args.template:
        with open(args.template, encoding="utf-8") as f:
            source = f.read()
    else:
        source = config["chat_template"]
    env = make_env()
    template_vars = jinja2.meta.find_undeclared_variables(env.parse(source))
    specials = special_tokens_map(config)
    for line in sys.stdin:
        rec = json.loads(line)
        out = {"id": rec["id"], "request": rec["request"]}
        try:
            # The request is prepared from a fresh copy: preparation mutates it.
            out["rendered"] = render_request(env, source, template_vars, specials,
                                             json.loads(json.dumps(rec["request"])))
        except RenderError as e:
            out["error"] = str(e)
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
