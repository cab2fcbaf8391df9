#!/usr/bin/env python3
"""Generate deterministic OpenAI chat requests for the golden tests.

Usage: gen_requests.py FAMILY COUNT SEED > requests.jsonl

FAMILY selects the features the family's chat template supports:
  llama3   system, tools (one call per turn), tool results, content parts
  qwen3    system, tools (several calls per turn), tool results, reasoning
  mistral  optional system then strict user/assistant alternation
  gemma3   optional system then strict user/assistant alternation, openai parts
  deepseek3 system, tools (several calls per turn), tool results
  generic  optional system then alternation (for extra templates)
Every family also gets special tokens inside text, unicode, whitespace edge
cases, continue_final_message, add_generation_prompt false, and a few requests
that the template must reject.
"""

import json
import random
import sys

WORDS = ("the a of to and in is it you that he was for on are with as his they be at one have this from "
         "or had by hot word but what some we can out other were all there when up use your how said an each "
         "she which do their time if will way about many then them write would like so these her long make "
         "thing see him two has look more day could go come did number sound no most people my over know "
         "water than call first who may down side been now find cache prefix router token block replica").split()

UNICODE = ["héllo wörld", "日本語のテキスト", "中文字符", "한국어", "Ελληνικά", "русский текст", "emoji 🎉🚀👍🏽",
           "עברית מימין לשמאל", "العربية", "zero\u200bwidth", "combining e\u0301 a\u0300", "math ∑∫√∞≠",
           "tab\there", "crlf\r\nline", "ｆｕｌｌｗｉｄｔｈ", "ß ẞ ﬁ ligature", "🏳️‍🌈 zwj", "\u00a0nbsp\u00a0"]

SPECIALS = {
    "llama3": ["<|eot_id|>", "<|start_header_id|>user<|end_header_id|>", "<|begin_of_text|>", "<|python_tag|>"],
    "qwen3": ["<|im_end|>", "<|im_start|>system", "<|endoftext|>", "<think>", "</think>", "<tool_call>"],
    "mistral": ["</s>", "<s>", "[INST]", "[/INST]", "<unk>"],
    "gemma3": ["<end_of_turn>", "<start_of_turn>user", "<bos>", "<eos>", "<start_of_image>"],
    "deepseek3": ["<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<｜tool▁calls▁begin｜>", "<think>"],
    "generic": ["<|im_end|>", "</s>", "<|eot_id|>", "[INST]", "<end_of_turn>"],
}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "City and country, e.g. Paris, France"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"]}}},
    {"type": "function", "function": {
        "name": "search_docs", "description": "Search the knowledge base <internal> & return 'top' hits.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "filters": {"type": "object", "properties": {"lang": {"type": "string"}, "since": {"type": "string", "format": "date"}}}},
            "required": ["query"]}}},
    {"type": "function", "function": {"name": "no_params"}},
    {"type": "function", "function": {
        "name": "compute", "description": "Évaluer une expression — 計算する",
        "parameters": {"type": "object", "properties": {"expr": {"type": "string"}, "precision": {"type": "number", "default": 0.001}}},
        "strict": True}},
    {"type": "function", "function": {
        "name": "book_flight", "description": None,
        "parameters": {"properties": {"to": {"type": "string"}, "from": {"type": "string"}, "passengers": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}}}, "type": "object"}}},
]

ARGS = [
    {"location": "Paris, France", "unit": "celsius"},
    {"query": "kv cache \"routing\"", "limit": 5, "filters": {"lang": "de", "since": "2024-01-01"}},
    {},
    {"expr": "2**10 / 3", "precision": 0.1},
    {"to": "東京", "from": "São Paulo", "passengers": [{"name": "Zoë", "age": 31}, {"name": "Li", "age": 4}]},
    {"numbers": [1, -2, 3.5, 0.0, 1e-07, 2.5e+21, 12345678901234], "flag": True, "none": None, "nested": {"z": 1, "a": [True, False]}},
    {"text": "line1\nline2\ttab \\ backslash </s> <|eot_id|>", "emoji": "🎉"},
]


class Gen:
    def __init__(self, family, seed):
        self.f = family
        self.r = random.Random(seed)
        self.call = 0

    def words(self, lo, hi):
        return " ".join(self.r.choice(WORDS) for _ in range(self.r.randint(lo, hi)))

    def text(self):
        r = self.r.random()
        s = self.words(1, 40)
        if r < 0.15:
            s += " " + self.r.choice(UNICODE)
        elif r < 0.25:
            s = self.r.choice(SPECIALS[self.f]) + " " + s
        elif r < 0.32:
            s += " " + self.r.choice(SPECIALS[self.f]) + " " + self.words(1, 5)
        elif r < 0.38:
            s = self.r.choice(["  ", "\n", " \n\n", "\t"]) + s + self.r.choice(["  ", "\n", "\n\n", " "])
        elif r < 0.41:
            s = "\n".join(self.words(1, 8) for _ in range(self.r.randint(2, 6)))
        elif r < 0.44:
            s = "x" * self.r.randint(1, 3) + " " + s.upper()
        elif r < 0.46:
            s = "```python\ndef f(x):\n    return {'a': x}\n```"
        elif r < 0.48:
            s = "   "
        return s

    def content(self, allow_parts=True):
        if allow_parts and self.r.random() < 0.2:
            parts = []
            for _ in range(self.r.randint(1, 3)):
                if self.r.random() < 0.1:
                    parts.append({"type": "text", "text": self.text(), "extra": 1})
                else:
                    parts.append({"type": "text", "text": self.text()})
            return parts
        return self.text()

    def tool_call(self):
        self.call += 1
        i = self.r.randrange(len(ARGS))
        name = TOOLS[i % len(TOOLS)]["function"]["name"]
        a = ARGS[i]
        r = self.r.random()
        if r < 0.7:
            args = json.dumps(a, ensure_ascii=self.r.random() < 0.5)
        elif r < 0.8:
            args = json.dumps(a, indent=2)
        elif r < 0.87:
            args = ""
        elif r < 0.92:
            args = "{not json"
        else:
            args = a  # already an object
        return {"id": "call_%d" % self.call, "type": "function", "function": {"name": name, "arguments": args}}

    def tool_result(self, tc):
        r = self.r.random()
        if r < 0.5:
            c = json.dumps({"result": self.words(1, 6), "ok": True})
        elif r < 0.8:
            c = self.text()
        else:
            c = [{"type": "text", "text": self.words(1, 5)}, {"type": "text", "text": self.words(1, 5)}]
        m = {"role": "tool", "tool_call_id": tc["id"], "content": c}
        if self.r.random() < 0.2:
            m["name"] = tc["function"]["name"]
        return m

    def system(self):
        s = self.r.choice([
            "You are a helpful assistant.",
            "You are a terse assistant for a KV-cache-aware router. Answer in one sentence.",
            "Du bist ein hilfreicher Assistent. Antworte auf Deutsch. 🇩🇪",
            self.words(20, 120),
        ])
        if self.r.random() < 0.1:
            return [{"type": "text", "text": s}]
        return s

    def conversation(self):
        f = self.f
        msgs = []
        # Mistral's and Gemma 3's templates have no tool support: a few tool
        # requests there check that both sides reject them alike.
        p_tools = 0.35 if f in ("llama3", "qwen3", "deepseek3", "generic") else 0.05
        use_tools = self.r.random() < p_tools
        if self.r.random() < 0.6:
            msgs.append({"role": "system", "content": self.system()})
        turns = self.r.randint(1, 6)
        for t in range(turns):
            um = {"role": "user", "content": self.content()}
            if self.r.random() < 0.05:
                um["name"] = "alice"
            msgs.append(um)
            last = t == turns - 1
            if last and self.r.random() < 0.7:
                break
            if use_tools and self.r.random() < 0.6:
                n = self.r.choice([1, 1, 2, 3]) if f in ("qwen3", "deepseek3") else 1
                tcs = [self.tool_call() for _ in range(n)]
                am = {"role": "assistant", "tool_calls": tcs}
                r = self.r.random()
                if f == "llama3" or r < 0.5:
                    am["content"] = None
                elif r < 0.8:
                    am["content"] = ""
                else:
                    am["content"] = self.words(2, 10)
                msgs.append(am)
                for tc in tcs:
                    msgs.append(self.tool_result(tc))
                if f == "qwen3" or self.r.random() < 0.7:
                    msgs.append({"role": "assistant", "content": self.content()})
                else:
                    break
            else:
                am = {"role": "assistant", "content": self.content()}
                if f == "qwen3" and self.r.random() < 0.3:
                    r = self.r.random()
                    if r < 0.4:
                        am["reasoning_content"] = self.words(3, 20)
                    elif r < 0.7:
                        am["content"] = "<think>\n" + self.words(3, 20) + "\n</think>\n\n" + self.words(3, 20)
                    else:
                        am["reasoning"] = self.words(3, 20)
                msgs.append(am)
        req = {"model": "m", "messages": msgs}
        if use_tools:
            k = self.r.randint(1, len(TOOLS))
            req["tools"] = self.r.sample(TOOLS, k)
            if self.r.random() < 0.2:
                req["tool_choice"] = "auto"
        return req

    def request(self):
        req = self.conversation()
        r = self.r.random()
        last = req["messages"][-1]
        if r < 0.12 and last["role"] == "assistant" and last.get("content") and not last.get("tool_calls"):
            req["continue_final_message"] = True
            req["add_generation_prompt"] = False
        elif r < 0.18 and last["role"] == "user":
            # continue a partial assistant answer
            req["messages"].append({"role": "assistant", "content": self.words(1, 8) + self.r.choice(["", " ", "\n"])})
            req["continue_final_message"] = True
            req["add_generation_prompt"] = False
        elif r < 0.24:
            req["add_generation_prompt"] = False
        elif r < 0.25:
            req["continue_final_message"] = True  # with add_generation_prompt (default true): an error
        kw = {}
        if self.f == "qwen3" and self.r.random() < 0.3:
            kw["enable_thinking"] = self.r.random() < 0.5
        if self.f == "llama3" and self.r.random() < 0.2:
            kw["date_string"] = self.r.choice(["01 Jan 2025", "29 Feb 2028"])
        if self.f == "llama3" and "tools" in req and self.r.random() < 0.3:
            kw["tools_in_user_message"] = False
        if self.f == "generic":
            kw["date_string"] = "26 Jul 2024"  # templates that would call strftime_now
            kw["datetime"] = "2024-07-26"  # firefunction-v2 needs these two
            kw["functions"] = json.dumps([t["function"] for t in TOOLS[:2]])
        if self.r.random() < 0.05:
            kw["unused_kwarg"] = "ignored"
        if self.r.random() < 0.03:
            kw["bos_token"] = "<OVERRIDE>"
        if kw:
            req["chat_template_kwargs"] = kw
        if self.r.random() < 0.03:
            req["documents"] = [{"title": "Doc", "text": self.words(3, 10)}]
        return req


def main():
    family, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    g = Gen(family, seed)
    for i in range(count):
        sys.stdout.write(json.dumps({"id": "%s-%04d" % (family, i), "request": g.request()}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
