"""Shared by the side-by-side benchmark scripts: the repository root, the random ~25M-parameter Llama and the
random GPT-2 124M."""
import os

import torch
import transformers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def random_llama(path):
    """Saves a random Llama of the shape of tunebench's random-llama-25m (randomLlama25mConfig in
    core/model/config.cpp), so both sides of a benchmark load the same weights."""
    cfg = transformers.LlamaConfig(vocab_size=32000, hidden_size=384, intermediate_size=1024, num_hidden_layers=8,
                                   num_attention_heads=6, num_key_value_heads=6, head_dim=64,
                                   max_position_embeddings=2048, rms_norm_eps=1e-5, tie_word_embeddings=True,
                                   bos_token_id=1, eos_token_id=None, pad_token_id=None)
    cfg.dtype = torch.float32
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(path, safe_serialization=True)


def random_gpt2(path):
    """Saves a random GPT-2 124M (transformers' default GPT2Config, which is gpt2's: vocab 50257, 1024 positions,
    12 layers of 768, tied head). No dropout (Tunebench's GPT-2 has none; gpt2's 0.1 would cost the peer three
    dropout masks a layer). No EOS id, as in random_llama: with one, Tunebench's LoRA also trains the EOS
    embedding row (trainable_tokens: auto) and PEFT does not."""
    cfg = transformers.GPT2Config(bos_token_id=None, eos_token_id=None, attn_pdrop=0.0, embd_pdrop=0.0,
                                  resid_pdrop=0.0)
    cfg.dtype = torch.float32
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(path, safe_serialization=True)
