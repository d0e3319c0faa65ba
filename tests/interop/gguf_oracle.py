"""GGUF oracle for Tunebench's interop test: the gguf package reads our .gguf files, transformers loads
them (its GGUF path undoes llama.cpp's q/k row permutation) and llama.cpp runs them, giving reference
logits, metadata, greedy continuations and the tokenizers both derive from the file's vocabulary.

usage:
  gguf_oracle.py make-untied SRC_DIR OUT_DIR
      Copies the model folder SRC_DIR to OUT_DIR with tie_word_embeddings false and an lm_head.weight
      of the embedding plus small noise (seed 0), so that the export has an output.weight to write.
  gguf_oracle.py make-bpe OUT_DIR
      Trains the Llama-3-style and Qwen2-style byte-level BPE tokenizers of tokenizer_oracle.py and writes
      OUT_DIR/llama3 (a random LlamaConfig model, untied) and OUT_DIR/qwen2 (a random Qwen2Config model with
      q/k/v biases, tied), each with its tokenizer.json and a vocab_size equal to the tokenizer's size; then
      OUT_DIR/llama31 (llama3's tokenizer, Llama 3 rope scaling) and OUT_DIR/qwen3 (qwen2's tokenizer, a
      random Qwen3Config model with q/k norms, head_dim 16 x 8 heads over hidden 64, tied) and OUT_DIR/smollm3
      (llama3's tokenizer, a random SmolLM3Config model of 8 layers, layers 3 and 7 without rotary
      embeddings, tied).
  gguf_oracle.py make-gpt2 TOKENIZER_DIR OUT_DIR
      Writes OUT_DIR: a random GPT2LMHeadModel (2 layers, n_embd 64, tied, biases drawn with std 0.2)
      with the GPT-2 tokenizer files of TOKENIZER_DIR.
  gguf_oracle.py make-gemma3 SRC_DIR OUT_DIR
      Writes OUT_DIR: a random Gemma 3 text model (4 layers, norm weights drawn, attention wider than the
      model) whose sliding layers, local rotary base and linear scaling on the full layers are not llama.cpp's
      defaults, around the tokenizer.model of SRC_DIR with add_dummy_prefix turned off (as Gemma's is).
  gguf_oracle.py make-phi3 SRC_DIR OUT_DIR
      Writes OUT_DIR: a random Phi-3 (fused q/k/v and gate/up, half of each head rotating, LongRoPE with an
      original context of 4, so that llama.cpp's context of 64 takes the long factors, as ours does past 4
      positions; no window, which llama.cpp's phi3 does not run) around the tokenizer.model of SRC_DIR.
  gguf_oracle.py check CASES_JSON OUT_DIR
      CASES_JSON: [{"name", "gguf": path, "sp_model": tokenizer.model | "tokenizer_json": tokenizer.json,
      "ids": [int], "texts": [str]}]. For a tokenizer.json the report has "merges_match" and "hf_ids" (HF
      tokenizers on the file) instead of "scores_match" and "sp_ids".
      Writes OUT_DIR/<name>.safetensors ("logits": fp32 [T, vocab], from the GGUF loaded in transformers)
      and prints one JSON object: {name: {"metadata": {key: value (scalars only)},
      "tensors": {name: {"shape": [...] (as stored), "type": int}}, "vocab_size", "pieces_match",
      "scores_match", "types_match", "first_mismatch", "gguf_ids": [[int]], "sp_ids": [[int]],
      "tie_word_embeddings", "warnings", and "rope_freqs" (its values) when the file has that tensor}}.
      llama.cpp itself (llama-cpp-python, built from source by scripts/setup) loads each file too: the
      safetensors file adds "llama_cpp_logits" (fp32 [T, vocab] for the case's ids, f32 KV cache) and the
      report adds "llama_cpp_ids" (llama.cpp's tokenizer on the texts, BOS as the file's add_bos_token
      says), "llama_cpp_greedy" (16 tokens llama.cpp picks greedily after the ids) and "llama_cpp_arch"
      (the architecture llama.cpp read). A case with "quant_reference" (the f32 export of the same run) gets
      "quant_same" (Q8_0 tensors equal to gguf-py quantising the f32 file's tensor, byte for byte),
      "quant_differ" (names of those that are not) and "quant_kept" (matrices not in Q8_0). A case with "adapter" (a LoRA adapter .gguf) and "adapter_base"
      (the base model .gguf) also gets "llama_cpp_base_logits" (the base file alone) and
      "llama_cpp_adapter_logits" (the base file with the adapter, scale 1).
"""
import json
import logging
import os
import shutil
import sys
import warnings

import gguf
import numpy as np
import sentencepiece
import tokenizers
import torch
import transformers
from safetensors.torch import load_file, save_file


def make_untied(src, out):
    shutil.copytree(src, out, dirs_exist_ok=True)
    weights = load_file(os.path.join(src, "model.safetensors"))
    torch.manual_seed(0)
    embed = weights["model.embed_tokens.weight"]
    weights["lm_head.weight"] = embed + 0.01 * torch.randn_like(embed)
    save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    config["tie_word_embeddings"] = False
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def make_bpe(out):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import tokenizer_oracle

    torch.manual_seed(0)
    common = dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=2, max_position_embeddings=256, initializer_range=0.25)
    for name, make in (("llama3", tokenizer_oracle.make_llama3), ("qwen2", tokenizer_oracle.make_qwen2)):
        folder = os.path.join(out, name)
        tok, _, config = make(out)  # writes OUT_DIR/<name>/tokenizer.json and tokenizer_config.json
        vocab = tok.get_vocab_size(with_added_tokens=True)
        bos = tok.token_to_id(config["bos_token"]) if config["bos_token"] else None
        eos = tok.token_to_id(config["eos_token"])
        if name == "llama3":
            cfg = transformers.LlamaConfig(**common, vocab_size=vocab, tie_word_embeddings=False,
                                           rms_norm_eps=1e-5, bos_token_id=bos, eos_token_id=eos)
            model = transformers.LlamaForCausalLM(cfg)
        else:
            cfg = transformers.Qwen2Config(**common, vocab_size=vocab, tie_word_embeddings=True,
                                           rms_norm_eps=1e-6, bos_token_id=bos, eos_token_id=eos)
            model = transformers.Qwen2ForCausalLM(cfg)
            with torch.no_grad():  # biases large enough that dropping or misplacing them shows
                for layer in model.model.layers:
                    for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                        proj.bias.normal_(0.0, 0.5)
        model.save_pretrained(folder)

    # Around the same tokenizers: a Llama with Llama 3's rope scaling (theta 500000, so that the 4 rotary
    # frequencies of head_dim 8 fall in all three bands: kept, smoothed, divided by the factor) and a Qwen3
    # (q/k RMSNorms, no biases, tied head).
    for name, source in (("llama31", "llama3"), ("qwen3", "qwen2"), ("smollm3", "llama3")):
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(out, source, f), os.path.join(folder, f))
        tok = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        with open(os.path.join(folder, "tokenizer_config.json")) as f:
            tok_config = json.load(f)
        vocab = tok.get_vocab_size(with_added_tokens=True)
        bos = tok.token_to_id(tok_config["bos_token"]) if tok_config["bos_token"] else None
        eos = tok.token_to_id(tok_config["eos_token"])
        if name == "llama31":
            cfg = transformers.LlamaConfig(**common, vocab_size=vocab, tie_word_embeddings=False, rms_norm_eps=1e-5,
                                           bos_token_id=bos, eos_token_id=eos, rope_theta=500000.0,
                                           rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                         "original_max_position_embeddings": 8192})
            model = transformers.LlamaForCausalLM(cfg)
        elif name == "smollm3":
            # SmolLM3Config's default NoPE layers (every fourth), which llama.cpp's smollm3 assumes.
            cfg = transformers.SmolLM3Config(**{**common, "num_hidden_layers": 8}, vocab_size=vocab,
                                             tie_word_embeddings=True, rms_norm_eps=1e-6, bos_token_id=bos,
                                             eos_token_id=eos, pad_token_id=None)
            model = transformers.SmolLM3ForCausalLM(cfg)
        else:
            # head_dim 16 with 8 heads of a 64-wide model: like the published Qwen3 models, the attention is
            # wider than the hidden size, which only attention.key_length tells llama.cpp.
            cfg = transformers.Qwen3Config(**common, head_dim=16, vocab_size=vocab, tie_word_embeddings=True,
                                           rms_norm_eps=1e-6, bos_token_id=bos, eos_token_id=eos)
            model = transformers.Qwen3ForCausalLM(cfg)
            with torch.no_grad():  # q/k norms away from 1, so that dropping or misplacing them shows
                for layer in model.model.layers:
                    layer.self_attn.q_norm.weight.uniform_(0.5, 1.5)
                    layer.self_attn.k_norm.weight.uniform_(0.5, 1.5)
        model.save_pretrained(folder)


def make_gemma3(src, out):
    from sentencepiece import sentencepiece_model_pb2

    torch.manual_seed(0)
    # layer_types unlike llama.cpp's default pattern (five of six sliding), a local base unlike its default
    # 10,000, and query_pre_attn_scalar = head_dim, the scale llama.cpp applies.
    cfg = transformers.Gemma3TextConfig(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=32, max_position_embeddings=512,
        initializer_range=0.1, sliding_window=6, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
        pad_token_id=None,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention"],
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0}})
    cfg.dtype = torch.float32
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    with torch.no_grad():  # Gemma's norm weights start at 0 (a scale of 1): drawn, so that an offset shows
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.normal_(0.0, 0.3)
    model.save_pretrained(out, safe_serialization=True)
    proto = sentencepiece_model_pb2.ModelProto()
    with open(os.path.join(src, "tokenizer.model"), "rb") as f:
        proto.ParseFromString(f.read())
    proto.normalizer_spec.add_dummy_prefix = False
    with open(os.path.join(out, "tokenizer.model"), "wb") as f:
        f.write(proto.SerializeToString())
    shutil.copyfile(os.path.join(src, "tokenizer_config.json"), os.path.join(out, "tokenizer_config.json"))


def make_phi3(src, out):
    torch.manual_seed(0)
    cfg = transformers.Phi3Config(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=512, original_max_position_embeddings=4,
        initializer_range=0.1, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=None,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                         "short_factor": [1.0, 1.0, 1.0, 1.0], "long_factor": [2.0, 4.0, 8.0, 16.0]})
    cfg.dtype = torch.float32
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(out, safe_serialization=True)
    for f in ("tokenizer.model", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(src, f), os.path.join(out, f))


class _Collect(logging.Handler):
    def __init__(self, sink):
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record):
        self.sink.append(record.getMessage())


def field_value(field):
    """A scalar or string field's value; None for arrays."""
    if field.types and field.types[0] == gguf.GGUFValueType.ARRAY:
        return None
    value = field.contents()
    if isinstance(value, (np.generic,)):
        value = value.item()
    return value


def sp_type(sp, i):
    # GGUF token_type numbering: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
    if sp.IsUnknown(i):
        return 2
    if sp.IsControl(i):
        return 3
    if sp.IsUnused(i):
        return 5
    if sp.IsByte(i):
        return 6
    return 1


def check_case(case, report):
    reader = gguf.GGUFReader(case["gguf"])
    report["metadata"] = {k: field_value(f) for k, f in reader.fields.items() if field_value(f) is not None}
    report["tensors"] = {t.name: {"shape": [int(d) for d in t.shape], "type": int(t.tensor_type)}
                         for t in reader.tensors}
    for t in reader.tensors:
        if t.name == "rope_freqs.weight":
            report["rope_freqs"] = [float(v) for v in np.array(t.data, dtype=np.float32)]
    pattern = reader.fields.get("gemma3.attention.sliding_window_pattern")
    if pattern is not None:
        report["sliding_window_pattern"] = [bool(v) for v in pattern.contents()]
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    if "tokenizer_json" in case:
        check_bpe_vocab(case, reader, tokens, types, report)
    else:
        check_sp_vocab(case, reader, tokens, types, report)
    if "quant_reference" in case:
        check_quantized(case, reader, report)

    folder, name = os.path.split(case["gguf"])
    extra = {}
    architecture = report["metadata"].get("general.architecture")
    if architecture in ("smollm3", "phi3"):
        # transformers' GGUF reader has no smollm3, and its phi3 reads no LongRoPE factors: llama.cpp
        # (llama_cpp_case) is the reference.
        report["tie_word_embeddings"] = "output.weight" not in report["tensors"]
        if "tokenizer_json" in case:
            hf = tokenizers.Tokenizer.from_file(case["tokenizer_json"])
            report["hf_ids"] = [hf.encode(t).ids for t in case["texts"]]
        return None
    if architecture in ("qwen3", "gpt2"):
        # Two gaps in transformers' GGUF mappings, right for the published models only: qwen3 skips
        # rope.dimension_count (head_dim falls back to 128), gpt2 reads context_length into n_ctx, not
        # n_positions (1024). Give it the file's own values.
        config = transformers.AutoConfig.from_pretrained(folder, gguf_file=name)
        if architecture == "qwen3":
            config.head_dim = report["metadata"]["qwen3.rope.dimension_count"]
        else:
            config.n_positions = report["metadata"]["gpt2.context_length"]
        extra["config"] = config
    elif architecture == "gemma3":
        # transformers' gemma3 mapping reads neither which layers slide, nor the sliding layers' rotary base,
        # nor linear scaling, and assumes query_pre_attn_scalar 256 (right for the published Gemma 3 models
        # only): give it the file's values and llama.cpp's scale, head_dim^-1/2.
        md = report["metadata"]
        config = transformers.AutoConfig.from_pretrained(folder, gguf_file=name)
        if "sliding_window_pattern" in report:
            config.layer_types = ["sliding_attention" if p else "full_attention"
                                  for p in report["sliding_window_pattern"]]
        config.query_pre_attn_scalar = config.head_dim
        full = {"rope_type": "default", "rope_theta": float(md["gemma3.rope.freq_base"])}
        if md.get("gemma3.rope.scaling.type") == "linear":
            full.update(rope_type="linear", factor=float(md["gemma3.rope.scaling.factor"]))
        local = float(md.get("gemma3.rope.freq_base_swa", 10000.0))
        config.rope_parameters = {"full_attention": full,
                                  "sliding_attention": {"rope_type": "default", "rope_theta": local}}
        extra["config"] = config
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                              **extra).eval()
    report["tie_word_embeddings"] = bool(model.config.tie_word_embeddings)
    ids = torch.tensor([case["ids"]], dtype=torch.int64)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    report["gguf_ids"] = [tokenizer(t).input_ids for t in case["texts"]]
    if "tokenizer_json" in case:
        hf = tokenizers.Tokenizer.from_file(case["tokenizer_json"])
        report["hf_ids"] = [hf.encode(t).ids for t in case["texts"]]
    else:
        # sentencepiece itself, with the BOS the file says to add.
        sp = sentencepiece.SentencePieceProcessor(model_file=case["sp_model"])
        report["sp_ids"] = [[sp.bos_id()] + sp.encode(t) for t in case["texts"]]
    return logits


def _plain_cpu_buffers():
    """llama.cpp's model defaults without its extra buffer types (weights repacked for AMX or interleaved
    kernels): the plain ggml CPU path, the same reference on every machine. With them, evaluating a Q8_0 file
    died with SIGSEGV or SIGILL on a 2-vCPU Xeon with AMX (llama.cpp's own Q8_0 quantisation of the same model
    too, so not the file; LibTorch's oneDNN ran AMX-BF16 on that machine; the cause was not chased)."""
    import llama_cpp

    low = llama_cpp.llama_cpp
    if getattr(low, "_tunebench_plain", False):
        return
    default = low.llama_model_default_params

    def plain():
        params = default()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = plain  # what llama_cpp.Llama reads its model defaults from
    low._tunebench_plain = True


def llama_cpp_model(path, **extra):
    import llama_cpp

    _plain_cpu_buffers()
    n_ctx = 64
    return llama_cpp.Llama(model_path=path, n_ctx=n_ctx, logits_all=True, verbose=False, n_threads=2, n_batch=n_ctx,
                           type_k=0, type_v=0, **extra)  # GGML_TYPE_F32: no f16 rounding in the KV cache


def llama_cpp_logits(path, ids, **extra):
    model = llama_cpp_model(path, **extra)
    model.reset()
    model.eval(ids)
    logits = torch.tensor(np.array(model.scores[: len(ids)], dtype=np.float32))
    model.close()
    return logits


def llama_cpp_case(case, report):
    """The file through llama.cpp: tokens of the texts, logits of the ids, a greedy continuation; with an
    adapter, the logits of the base file alone and with the adapter applied."""
    out = {}
    if "adapter" in case:
        out["llama_cpp_base_logits"] = llama_cpp_logits(case["adapter_base"], case["ids"])
        out["llama_cpp_adapter_logits"] = llama_cpp_logits(case["adapter_base"], case["ids"], lora_path=case["adapter"])
    model = llama_cpp_model(case["gguf"])
    report["llama_cpp_arch"] = model.metadata.get("general.architecture")
    report["llama_cpp_ids"] = [model.tokenize(t.encode("utf-8"), add_bos=True, special=True) for t in case["texts"]]
    ids = case["ids"]
    model.reset()
    model.eval(ids)
    out["llama_cpp_logits"] = torch.tensor(np.array(model.scores[: len(ids)], dtype=np.float32))
    greedy = []
    for _ in range(16):
        token = int(np.argmax(model.scores[model.n_tokens - 1]))
        greedy.append(token)
        model.eval([token])
    report["llama_cpp_greedy"] = greedy
    model.close()
    return out


def make_gpt2(tokenizer_dir, out):
    """A random GPT-2 (tied head, tanh GELU) around the real GPT-2 tokenizer: export_oracle's, wider, with
    larger weights and biases."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_oracle

    os.makedirs(out, exist_ok=True)
    export_oracle.make_gpt2(out, tokenizer_dir, n_embd=64, n_head=4, initializer_range=0.25, bias_std=0.2)


def check_quantized(case, reader, report):
    """Each Q8_0 tensor of the file against gguf-py quantising the same tensor of the f32 export."""
    reference = {t.name: t for t in gguf.GGUFReader(case["quant_reference"]).tensors}
    same, differ, kept = 0, [], []
    for t in reader.tensors:
        if t.tensor_type != gguf.GGMLQuantizationType.Q8_0:
            if len(t.shape) > 1 and int(t.shape[1]) > 1:
                kept.append(t.name)
            continue
        source = np.array(reference[t.name].data, dtype=np.float32)
        expected = gguf.quants.quantize(source, gguf.GGMLQuantizationType.Q8_0).reshape(-1)
        if np.array_equal(expected, np.array(t.data).reshape(-1)):
            same += 1
        else:
            differ.append(t.name)
    report["quant_same"] = same
    report["quant_differ"] = differ
    report["quant_kept"] = kept  # matrices left unquantised


def check_bpe_vocab(case, reader, tokens, types, report):
    """Tokens, types and merges against the tokenizer.json itself."""
    with open(case["tokenizer_json"], encoding="utf-8") as f:
        spec = json.load(f)
    expected = {}
    for token, i in spec["model"]["vocab"].items():
        expected[i] = (token, 1)
    for added in spec.get("added_tokens", []):
        expected[added["id"]] = (added["content"], 3 if added["special"] else 4)
    n = max(expected) + 1
    want_tokens = [expected[i][0] if i in expected else f"[PAD{i}]" for i in range(n)]
    want_types = [expected[i][1] if i in expected else 5 for i in range(n)]
    report["vocab_size"] = len(tokens)
    report["pieces_match"] = list(tokens[:n]) == want_tokens
    report["types_match"] = [int(t) for t in types[:n]] == want_types
    report["first_mismatch"] = next(
        (i for i in range(n) if tokens[i] != want_tokens[i] or int(types[i]) != want_types[i]), -1)
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    report["merges_match"] = list(reader.fields["tokenizer.ggml.merges"].contents()) == merges
    report["merges"] = len(merges)


def check_sp_vocab(case, reader, tokens, types, report):
    scores = reader.fields["tokenizer.ggml.scores"].contents()
    sp = sentencepiece.SentencePieceProcessor(model_file=case["sp_model"])
    n = sp.get_piece_size()
    report["vocab_size"] = len(tokens)
    report["pieces_match"] = tokens[:n] == [sp.id_to_piece(i) for i in range(n)]
    report["scores_match"] = [float(s) for s in scores[:n]] == [float(np.float32(sp.get_score(i))) for i in range(n)]
    report["types_match"] = [int(t) for t in types[:n]] == [sp_type(sp, i) for i in range(n)]
    report["first_mismatch"] = next(
        (i for i in range(n) if tokens[i] != sp.id_to_piece(i) or int(types[i]) != sp_type(sp, i)), -1)


def check(cases_json, out_dir):
    with open(cases_json) as f:
        cases = json.load(f)
    result = {}
    for case in cases:
        report = {"warnings": []}
        handler = _Collect(report["warnings"])
        loggers = [logging.getLogger(), logging.getLogger("transformers")]
        for logger in loggers:
            logger.addHandler(handler)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = check_case(case, report)
            llama_tensors = llama_cpp_case(case, report)
        for logger in loggers:
            logger.removeHandler(handler)
        report["warnings"] += [str(w.message) for w in caught]
        tensors = {"logits": out.contiguous()} if out is not None else {}
        tensors.update({k: v.contiguous() for k, v in llama_tensors.items()})
        save_file(tensors, os.path.join(out_dir, case["name"] + ".safetensors"))
        result[case["name"]] = report
    print(json.dumps(result))


def main():
    mode = sys.argv[1]
    if mode == "make-untied":
        make_untied(sys.argv[2], sys.argv[3])
    elif mode == "make-bpe":
        make_bpe(sys.argv[2])
    elif mode == "make-gpt2":
        make_gpt2(sys.argv[2], sys.argv[3])
    elif mode == "make-gemma3":
        make_gemma3(sys.argv[2], sys.argv[3])
    elif mode == "make-phi3":
        make_phi3(sys.argv[2], sys.argv[3])
    elif mode == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown mode {mode!r} (make-untied | make-bpe | make-gpt2 | make-gemma3 | make-phi3 | check)")


if __name__ == "__main__":
    main()
