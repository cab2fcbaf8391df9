// corpus.mjs builds the deterministic list of raw texts the goldens are made
// from: English, code, JSON, unicode, emoji, CJK, whitespace runs, special-token
// strings inside text, long texts and seeded random fuzz strings. The same
// seed always gives the same texts, so the goldens can be regenerated and
// diffed.

// mulberry32 is a small seeded PRNG (public-domain algorithm).
export function mulberry32(seed) {
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const english = [
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure you'll see it's what we'd've done; they're here, aren't they?",
  "HELLO WORLD! I'M SHOUTING, DON'T YOU SEE'S IT?",
  "Prefix caching lets a second request with the same prompt skip most of its prefill.",
  "In 1969, Apollo 11 landed on the Moon; 600,000,000 people watched.",
  "Dr. Smith's e-mail: john.smith@example.com (call +1-555-0100 ext. 42).",
  "Version 3.14.159 was released on 2024-05-17T12:34:56Z.",
  "  leading spaces and trailing spaces  ",
  "naïve café résumé coöperate façade jalapeño",
  "Ünïcödé ÀÉÎÕÜ ß ẞ ŉ ǅ ǈ ǋ ﬁ ﬂ Ⅻ ① ²³ ½",
  "It costs $12.50 — or €11,20 — or ¥1,800 (¬‰).",
  "What?!?! No way... yes way!!! #hashtag @mention",
  "URL: https://example.com/path?query=1&b=two#frag",
  "tabs\tseparate\tthese\twords\t\tand\t\t\tmore",
];

const code = [
  "func main() {\n\tfmt.Println(\"hello, world\")\n}\n",
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n-1) + fib(n-2)\n\nprint([fib(i) for i in range(10)])\n",
  "const x = async (a, b) => { await foo(a ?? b); return a?.b ?? 0x1F; };\n",
  "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }\r\n",
  "SELECT id, name FROM users WHERE age >= 21 AND name LIKE '%smith%';",
  "for (let i = 0; i < 10; i++) {\n        console.log(i);\n    }\n\n\n",
  "<html><body><div class=\"a\">Hi &amp; bye</div></body></html>",
  "$ git commit -m \"balancer/proxy: retry only before the first byte\" && echo ok",
  "x = [1,2,3]\ny = {'a': 1, \"b\": [None, True, False]}\n",
  "    // indented comment\n        /* block */\n",
];

const json = [
  "{\"model\":\"llama\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}",
  "{\n  \"a\": 1,\n  \"b\": [1.5e10, -0.0001, null],\n  \"c\": {\"d\": \"\\u00e9\\n\"}\n}",
  "[{\"id\":123456789012,\"tags\":[\"x\",\"y\"]},{\"id\":0}]",
];

const unicode = [
  "日本語のテキストとカタカナ、ひらがな。漢字も含む。",
  "中文文本：你好，世界！这是一个测试。",
  "한국어 텍스트입니다. 안녕하세요!",
  "Привет, мир! Это тест на русском языке.",
  "مرحبا بالعالم! هذا اختبار.",
  "שלום עולם",
  "नमस्ते दुनिया, यह एक परीक्षण है।",
  "สวัสดีชาวโลก นี่คือการทดสอบ",
  "Ελληνικά: Γειά σου Κόσμε",
  "e\u0301 a\u0300 o\u0308 n\u0303 \u1100\u1161\u11a8 Å Å",
  "\u00e9\u0065\u0301\u2126\u212b\u1e9b\u0323",
  "zero\u200bwidth\u200cjoiner\u200dand\ufeffbom",
  "control\u0001chars\u0007here\u001b[0m\u007f",
  "\u00a0nbsp\u2003em\u3000ideographic\u2028line\u2029para",
];

const emoji = [
  "😀😃😄😁 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇺🇸🇯🇵 ❤️ ✔︎",
  "I ❤ 🍕 and 🍣! 🚀🚀🚀",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝟙𝟚𝟛 𐍈 𓀀",
];

const whitespace = [
  " ", "  ", "\n", "\n\n", "\r\n", "\t", " \n ", "a  b   c    d",
  "line1\nline2\r\nline3\rline4", "\n\n\n\nfour newlines", "trailing\n\n  \n",
  "    ", "x\u00a0\u00a0y", " \t \t ", "end with space ", " start with space",
];

// Special-token strings of every family, so each family sees its own and the
// others' inside plain text.
const specials = [
  "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
  "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
  "<s>", "</s>", "<unk>", "[INST]", "[/INST]",
  "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<pad>", "<mask>", "<unused0>", "<start_of_image>",
  "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
  "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|startoftext|>",
  "<|im_start", "im_end|>", "<s", "</ s>", "< bos>", "<|reserved_special_token_0|>",
];

const words = [
  "the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are",
  "token", "cache", "prefill", "decode", "router", "replica", "GPU", "H100", "vLLM", "SGLang",
  "tokenization", "antidisestablishmentarianism", "pneumonoultramicroscopicsilicovolcanoconiosis",
  "don't", "we'll", "o'clock", "rock'n'roll", "e.g.", "i.e.", "etc.", "3.14", "1,000,000",
  "東京", "北京", "Zürich", "São", "Paulo", "Kraków", "😀", "→", "∑", "λ", "—", "…",
];

const ranges = [
  [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0x00, 0x1f], [0xa0, 0x2ff], [0x300, 0x36f],
  [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f],
  [0x1100, 0x11ff], [0x2000, 0x206f], [0x2190, 0x2bff], [0x3000, 0x30ff], [0x4e00, 0x9fff],
  [0xac00, 0xd7a3], [0xe000, 0xe0ff], [0xfb00, 0xfffd], [0x10000, 0x1007f], [0x1d400, 0x1d7ff],
  [0x1f300, 0x1faff], [0x20000, 0x2a6df], [0xe0000, 0xe007f], [0x10fff0, 0x10fffd],
];

function pick(rnd, arr) {
  return arr[Math.floor(rnd() * arr.length)];
}

function fuzz(rnd, n) {
  let s = "";
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.08) {
      s += pick(rnd, [" ", "  ", "\n", "\t", "\r\n", "'", "'s", "'LL", "▁", "Ġ"]);
    } else if (r < 0.12) {
      s += pick(rnd, specials);
    } else {
      const [lo, hi] = pick(rnd, ranges);
      s += String.fromCodePoint(lo + Math.floor(rnd() * (hi - lo + 1)));
    }
  }
  return s;
}

function sentence(rnd, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(pick(rnd, words));
    const r = rnd();
    if (r < 0.1) out.push(pick(rnd, [",", ".", "!", "?", ":", ";", " -", "\n", "  ", "\t"]));
    else if (r < 0.13) out.push(pick(rnd, specials));
  }
  let s = "";
  for (const w of out) {
    s += (rnd() < 0.85 ? " " : "") + w;
  }
  return rnd() < 0.5 ? s.trimStart() : s;
}

// buildCorpus returns about n texts, deterministic for a given seed.
export function buildCorpus(seed, n) {
  const rnd = mulberry32(seed);
  const fixed = [
    "", "a", "A", "hello", "Hello world", " Hello world", "Hello  world", "hello\nworld",
    ...english, ...code, ...json, ...unicode, ...emoji, ...whitespace, ...specials,
    specials.join(""), specials.join(" "), specials.join("\n"),
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>",
    "<s>[INST] Tell me a joke [/INST] Sure!</s>",
    "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>hi<｜Assistant｜>",
    "<|start|>system<|message|>You are ChatGPT.<|end|><|start|>user<|message|>hi<|end|>",
    "1234567890", "12345678901234567890", "3.14159265358979", "٣٤٥ ١٢", "½ ⅓ ¼ 0x1F 1e-9",
    "a".repeat(300), "ab".repeat(200), " ".repeat(100), "\n".repeat(50), "-".repeat(120), "=".repeat(64),
    "😀".repeat(40), "日本".repeat(100), "▁▁▁ ▁x", "ĠĠ Ġt",
    // Case folding beyond ASCII in (?i:'s|...): Oniguruma folds ſ to s.
    "'ſ", "'ſa", "x'ſ I'ſ don'T", "'\u212Aa 'ﬅ 'ß", "\uFBCB \uFBCB x",
    // Added tokens with white space and word characters around them.
    "a <|im_start|> b", "a\n\n<|im_end|>\n\nb", "x<think>y", "x <think> y", "<think>", " <think>\n",
    "a </think>  b", "é<tool_call>  {", "1<tool_call>\t", "_<think>_", " \u3000<|im_end|>\u3000 ",
  ];
  const texts = [...fixed];
  // Mixes of the fixed pieces.
  const pools = [english, code, json, unicode, emoji, whitespace, specials];
  while (texts.length < n * 0.45) {
    let s = "";
    const k = 1 + Math.floor(rnd() * 4);
    for (let i = 0; i < k; i++) {
      s += pick(rnd, pick(rnd, pools));
      if (rnd() < 0.5) s += pick(rnd, ["", " ", "\n", "\n\n", "  "]);
    }
    texts.push(s);
  }
  while (texts.length < n * 0.7) {
    texts.push(sentence(rnd, 3 + Math.floor(rnd() * 60)));
  }
  // Long texts (a few thousand characters).
  for (let i = 0; i < 10; i++) {
    let s = "";
    while (s.length < 3000 + i * 500) {
      s += pick(rnd, pick(rnd, pools)) + pick(rnd, [" ", "\n", "\n\n", ""]) + sentence(rnd, 20);
    }
    texts.push(s);
  }
  // Random fuzz strings.
  while (texts.length < n) {
    texts.push(fuzz(rnd, 1 + Math.floor(rnd() * 80)));
  }
  return texts;
}
