#!/usr/bin/env python3
"""Writes pretokenize_golden.json: the splits of adversarial strings under the
pre-tokenizer regular expressions, as a real backtracking regex engine with
lookahead and Unicode classes (the `regex` module) computes them. The Go
scanners in engine/pretokenize.go are hand-written; this file is their
independent reference. Only characters whose Unicode category is the same in
every Unicode version since 9.0 are used, so Go's tables and this module's
agree. Run: python3 gen_pretokenize.py > pretokenize_golden.json
"""
import json
import random
import sys

import regex

PATTERNS = {
    "gpt-2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    # llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN35, as the Qwen3.5 tokenizer.json
    # writes it: qwen2 with combining marks (\p{M}) joining letters and kept
    # out of the "other" runs.
    "qwen35": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}

# Only qwen35 treats combining marks apart from other characters; these
# cases exercise that under it alone.
MARK_ONLY = ["qwen35"]

FIXED = [
    "",
    "Hello world",
    "Hello, world! How's it going?",
    "I'm sure they'll say we'd've done it; you're right, it's John's.",
    "IT'S DON'T I'M WE'LL THEY'RE YOU'VE HE'D",
    "'s 'S 'sup 'ſ 'LL 'Ll 'lL 're' 'x ''s x''s",
    "'Sun 'LLama 'ſx 'REd 'VEry 'Mm 'Dd 'Tt 'rE9 x'Ss",
    "   leading spaces",
    "trailing spaces   ",
    "a  b   c    d",
    "tab\tsep\t\tmore\t \tend",
    "line\nbreak\n\nparagraph\r\n\r\nwindows \n  indented\n\tt",
    "x \n y\n \n z",
    "!!\n\nfoo  !!  \n",
    "12345 1234567 1 22 333 4444 x1y22z333",
    "3.14159 -42 +7 1,000,000 0x1F 1e-9",
    "func main() {\n\tfmt.Println(\"hi\")\n}\n",
    "def f(x):\n    return x**2  # square\n\n\n",
    "if (a<=b && c!=d) { return; } // done",
    "café naïve résumé Ünïcödé",
    "e\u0301 combining marks a\u0308\u0308",
    "日本語のテキスト、句読点。",
    "中文123混合abc",
    "Ⅻ ² ½ ١٢٣ ０１２ ⁴²",
    "Ελληνικά κείμενα και Кириллица",
    "emoji 😀😀 👍🏽 ok",
    "nbsp\u00a0here em\u2003space ideo\u3000space nel\u0085x ls\u2028y",
    " \u00a0a \u3000b \u2003\n",
    "ſ long s and K Kelvin",
    "(foo) [bar] {baz} <qux> \"quote\" 'single'",
    "...---___~~~",
    "a\r\rb\r\n\rc",
    "\n",
    " ",
    "  ",
    "\t",
    "'",
    "''",
    "'s",
    " 's",
    "1",
    " 1",
    "!",
    " !",
    "  !",
    "\n\n\n  \n",
    "\u0301",
    " \u0301",
    "\u0301abc \u0301\u0301 x\u0301y",
    "'\u0301s '\u0301 '\u0301x",
    "!\u0301 !!\u0301!! (\u0301)",
    "1\u0301 \u03012 \u0301\n\u0301",
    "\n\u0301x \t\u0301x \r\u0301",
    "नमस्ते दुनिया हिंदी",
    "สวัสดีครับ ผมชื่อ",
    "שָׁלוֹם עוֹלָם",
    "a\u20dd \u20dd! 1\u20dd",
    "☺\ufe0f ok\ufe0f \ufe0f\ufe0f",
    "x\u200dy \u200d\u0301",
]

ALPHABET = list(
    "aAzZ09 '\t\n\r.,;:!?()[]{}<>/\\|-_=+*&^%$#@~`\""
) + [
    "é", "Ü", "ß", "ſ", "K", "日", "本", "ア", "한", "я", "Ω",
    "\u0301", "\u0308", "Ⅻ", "²", "½", "٣", "０", "\u00a0", "\u2003",
    "\u3000", "\u0085", "\u2028", "😀", "👍", "🏽", "s", "S", "t", "T",
    "l", "L", "e", "E", "r", "R", "v", "V", "m", "M", "d", "D", "  ", "\n\n",
]

# Combining marks of each kind (Mn, Mc, Me, a variation selector), letters
# they combine with, and a format character (Cf, "other") for contrast.
MARKS = [
    "\u0301", "\u0308", "\u094d", "\u0903", "\u093f", "\u20dd", "\u0e31",
    "\u0e48", "\u05b4", "\u0670", "\ufe0f",
]
MARK_ALPHABET = ALPHABET + MARKS * 3 + [
    "\u0915", "\u0928", "\u0e01", "\u05e9", "\u0639", "\u200d", "\u263a",
]


def main():
    rnd = random.Random(20261129)
    cases = list(FIXED)
    for _ in range(400):
        n = rnd.randint(1, 24)
        cases.append("".join(rnd.choice(ALPHABET) for _ in range(n)))
    out = {"patterns": PATTERNS, "cases": []}

    def add(text, names):
        splits = {}
        for name in names:
            words = regex.findall(PATTERNS[name], text)
            assert "".join(words) == text, (name, text)
            splits[name] = words
        out["cases"].append({"text": text, "splits": splits})

    for text in cases:
        add(text, PATTERNS)
    for _ in range(2600):
        n = rnd.randint(1, 24)
        add("".join(rnd.choice(MARK_ALPHABET) for _ in range(n)), MARK_ONLY)
    # One case per line keeps the file small and its diffs readable.
    w = sys.stdout.write
    w('{"patterns": ' + json.dumps(out["patterns"], ensure_ascii=True) + ',\n "cases": [\n')
    for i, c in enumerate(out["cases"]):
        w("  " + json.dumps(c, ensure_ascii=True) + ("," if i + 1 < len(out["cases"]) else "") + "\n")
    w(" ]\n}\n")


if __name__ == "__main__":
    main()
