#!/usr/bin/env python3
"""Reference token ids for test_tokenizer_interop from Hugging Face tokenizers and sentencepiece.

Usage: tokenizer_oracle.py SOURCE_DIR OUT_DIR

Encodes one mixed corpus with:
  gpt2         HF tokenizers on tests/data/tokenizers/gpt2/tokenizer.json
  llama2       sentencepiece on tests/data/tokenizers/llama2/tokenizer.model
  stories260k  sentencepiece on datasets/models/stories260k/tokenizer.model (converted tok512)
  llama3       a byte-level BPE trained here with the Llama-3 split regex, ignore_merges and a
               TemplateProcessing BOS; written to OUT_DIR/llama3/tokenizer.json
  qwen2        a byte-level BPE trained here with the Qwen2 regex and an NFC normalizer;
               written to OUT_DIR/qwen2/tokenizer.json
and prints JSON: {"corpus": [...], "tokenizers": {name: {kind, path, ids, decoded, ...}}}.
"""
import json
import os
import sys
import unicodedata

import sentencepiece as spm
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = [
    "Hello world",
    " Hello world",
    "Hello world!",
    "  leading spaces and trailing   ",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll see they've done it; she's 'quoted' and we'd go. DON'T SHOUT, I'LL, WE'VE",
    "def main():\n    return [x**2 for x in range(10)]  # squares\n",
    "if (a != b && c >= 0) { printf(\"%d\\n\", c); } // done",
    "\tTabbed\tline\twith\t\ttabs",
    "multiple\n\nnewlines\r\nand CRLF\r\n",
    "trailing newline\n",
    "   \n\t  \n",
    "    indented code\n        more",
    "emoji: 😀🎉👍🏽 family 👨‍👩‍👧‍👦 flag 🇫🇷",
    "中文分词测试：你好，世界！",
    "日本語のテキストとカタカナ、ひらがな。",
    "한국어 문장입니다.",
    "Accents: café, naïve, résumé, Ångström, São Paulo, Zürich, Ελληνικά, Русский текст",
    "Decomposed: cafe\u0301 nai\u0308ve A\u030angstro\u0308m",
    "Numbers 1234567 and 3.14159 and 1,000,000 and ٣٤٥ and ½",
    "<|endoftext|>",
    "text before <|endoftext|> text after",
    " <|endoftext|>",
    "<|endoftext|><|endoftext|>a",
    "<|endoftext|",
    "<|begin_of_text|>Hi<|eot_id|>",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "single words: wordtok, xwordtok wordtoky (wordtok)",
    "mask: hello   <mask> world <mask>",
    "added café and cafe\u0301 here",
    "Unicode spaces:\u00a0nbsp\u3000ideographic\u2009thin x \u0085nel\u2028sep",
    "NEL is white space: -- \u0085-- \u0085\u0085.",
    "URL https://example.com/path?query=1&b=2#frag and email a.b@c.org",
    "mixed CASE and camelCaseName and snake_case_name and ALLCAPS",
    "x",
    "",
    "ab" * 150,
    "\u00e9\u00e9\u00e9 \u00ff\u00fe ~~~ ---- ==== ....",
]

TRAIN_TEXT = [
    "Once upon a time there was a little girl who loved to read books about the sea.",
    "She walked to the library every day and asked the librarian for new stories.",
    "The weather was sunny, and the children played in the park until the evening.",
    "Machine learning models are trained on large datasets of text and code.",
    "Fine-tuning adapts a pretrained model to a new task with a small learning rate.",
    "def train(model, data):\n    for batch in data:\n        loss = model(batch)\n"
    "        loss.backward()\n",
    "for (int i = 0; i < n; ++i) { sum += values[i]; }\n",
    "I'm here, you're there, they've gone, we'll see, it's fine, he'd know.",
    "Numbers like 2024, 1234567 and 3.14 appear in many documents.",
    "Les élèves ont étudié le français à l'école. Ça va très bien, merci.",
    "Der schnelle braune Fuchs springt über den faulen Hund. Größe und Übung.",
    "中文文本用于测试分词器。你好世界。日本語の文章もあります。",
    "Emoji 😀 and symbols ★ ✓ → are common in chat messages.",
] * 20 + CORPUS


def train_byte_level(pattern, nfc, specials, ignore_merges):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(TRAIN_TEXT, trainer)
    return tok


def make_llama3(out_dir):
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                "<|eot_id|>"]
    tok = train_byte_level(LLAMA3_PATTERN, False, specials, True)
    # A word-only added token, and a non-special added token (kept by skip_special decoding).
    tok.add_tokens([AddedToken("wordtok", single_word=True, normalized=False),
                    AddedToken(" there", normalized=True)])
    bos = "<|begin_of_text|>"
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                      special_tokens=[(bos, tok.token_to_id(bos))]),
    ])
    return save(tok, out_dir, "llama3", {"bos_token": bos, "eos_token": "<|eot_id|>"})


def make_qwen2(out_dir):
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = train_byte_level(QWEN2_PATTERN, True, specials, False)
    # lstrip special token; a normalized added token given in decomposed form (matched after NFC).
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, normalized=False, special=True)])
    tok.add_tokens([AddedToken("cafe\u0301", normalized=True)])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return save(tok, out_dir, "qwen2", {"bos_token": None, "eos_token": "<|im_end|>"})


def save(tok, out_dir, name, config):
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "tokenizer.json")
    tok.save(path)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    # Reload from the file so the reference is exactly what the C++ side reads.
    return Tokenizer.from_file(path), path, config


def hf_entry(tok, path, config, normalize):
    tok.no_truncation()
    tok.no_padding()

    def token_id(name):
        return None if name is None else tok.token_to_id(name)

    ids = [tok.encode(line).ids for line in CORPUS]
    plain = [tok.encode(line, add_special_tokens=False).ids for line in CORPUS]
    return {
        "kind": "bpe",
        "path": path,
        "ids": ids,
        "decoded": [tok.decode(x, skip_special_tokens=True) for x in ids],
        "decodedKeepSpecial": [tok.decode(x, skip_special_tokens=False) for x in ids],
        # decode(encode(x, no specials), keep specials), and the text it gives back when nothing
        # is lost (NFC-normalized where the tokenizer normalizes; lstrip tokens drop spaces, and
        # added tokens decode to their own form).
        "roundTrip": [tok.decode(x, skip_special_tokens=False) for x in plain],
        "text": [unicodedata.normalize("NFC", line) if normalize else line for line in CORPUS],
        "bos": token_id(config.get("bos_token")),
        "eos": token_id(config.get("eos_token")),
        "vocabSize": tok.get_vocab_size(with_added_tokens=True),
    }


def sp_entry(path):
    sp = spm.SentencePieceProcessor(model_file=path)
    ids = [sp.encode(line) for line in CORPUS]
    return {
        "kind": "sentencepiece",
        "path": path,
        "ids": ids,
        "decoded": [sp.decode(x) for x in ids],
        "bos": sp.bos_id() if sp.bos_id() >= 0 else None,
        "eos": sp.eos_id() if sp.eos_id() >= 0 else None,
        "vocabSize": sp.get_piece_size(),
    }


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source_dir, out_dir = sys.argv[1], sys.argv[2]
    data = os.path.join(source_dir, "tests/data/tokenizers")
    gpt2_path = os.path.join(data, "gpt2/tokenizer.json")
    gpt2_config = json.load(open(os.path.join(os.path.dirname(gpt2_path), "tokenizer_config.json")))
    result = {"corpus": CORPUS, "tokenizers": {
        "gpt2": hf_entry(Tokenizer.from_file(gpt2_path), gpt2_path, gpt2_config, False),
        "llama2": sp_entry(os.path.join(data, "llama2/tokenizer.model")),
        "stories260k": sp_entry(
            os.path.join(source_dir, "datasets/models/stories260k/tokenizer.model")),
        "llama3": hf_entry(*make_llama3(out_dir), False),
        "qwen2": hf_entry(*make_qwen2(out_dir), True),
    }}
    json.dump(result, sys.stdout, ensure_ascii=True)


if __name__ == "__main__":
    main()
