"""Oracle for test_train_interop: the training steps of `tunebench bench train` done by transformers, PEFT and
torch.optim.AdamW (its default single-tensor path), printing each step's loss as JSON.

usage: train_oracle.py MODEL_DIR full|lora BATCH SEQ STEPS LR CLIP
       train_oracle.py make-gemma3 DIR   (writes the random Gemma 3 text model the test also trains)
       train_oracle.py make-smollm3 DIR  (the random SmolLM3 model: layers 1 and 3 without rotary embeddings)
       train_oracle.py make-phi3 DIR     (a random Phi-3 as Phi-4-mini: fused projections, LongRoPE, half-rotary heads)
Random tokens from torch.manual_seed(0) (ids = randint(3, vocab, (batch, seq)), labels = ids rolled by one),
AdamW at learning rate LR without weight decay, the summed cross-entropy over batch x seq, gradient clipping at CLIP (0:
none); LoRA r 8, alpha 16 on q_proj and v_proj (phi3: its fused qkv_proj), its A matrices drawn again in parameter order from seed 1.
"""
import json
import sys

import torch
import transformers
from peft import LoraConfig, get_peft_model


def make_gemma3(path):
    """A random Gemma 3 text model: norm weights drawn (they start at zero), a sliding window shorter than
    the rows, sliding layers with their own rotary base, linear scaling on the full layer."""
    torch.manual_seed(0)
    config = transformers.Gemma3TextConfig(
        vocab_size=320, hidden_size=64, intermediate_size=176, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=256, initializer_range=0.1,
        sliding_window=8, query_pre_attn_scalar=20, tie_word_embeddings=True, bos_token_id=1,
        eos_token_id=None, pad_token_id=None,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 50000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0}})
    config.dtype = torch.float32
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.normal_(0.0, 0.3)
    model.save_pretrained(path, safe_serialization=True)


def make_smollm3(path):
    """A random SmolLM3: the Llama layout with every second layer's attention free of rotary embeddings."""
    torch.manual_seed(0)
    config = transformers.SmolLM3Config(
        vocab_size=320, hidden_size=64, intermediate_size=176, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, initializer_range=0.1, no_rope_layer_interval=2,
        tie_word_embeddings=True, bos_token_id=1, eos_token_id=None, pad_token_id=None)
    config.dtype = torch.float32
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(path, safe_serialization=True)


def make_phi3(path):
    """A random Phi-3 laid out as Phi-4-mini: q, k, v and gate, up as one layer each, half of each head rotating,
    LongRoPE whose original context (16) the 32-token rows pass (the long factors), a window of 8 on every layer."""
    torch.manual_seed(0)
    config = transformers.Phi3Config(
        vocab_size=320, hidden_size=64, intermediate_size=176, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, original_max_position_embeddings=16,
        initializer_range=0.1, sliding_window=8, tie_word_embeddings=True, bos_token_id=1, eos_token_id=None,
        pad_token_id=None,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                         "short_factor": [1.0, 1.2, 1.5, 2.0], "long_factor": [1.5, 2.5, 4.0, 8.0]})
    config.dtype = torch.float32
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(path, safe_serialization=True)


def main():
    if sys.argv[1] == "make-gemma3":
        make_gemma3(sys.argv[2])
        return
    if sys.argv[1] == "make-smollm3":
        make_smollm3(sys.argv[2])
        return
    if sys.argv[1] == "make-phi3":
        make_phi3(sys.argv[2])
        return
    path, method = sys.argv[1], sys.argv[2]
    batch, seq, steps = map(int, sys.argv[3:6])
    lr, clip = float(sys.argv[6]), float(sys.argv[7])
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if method == "lora":
        targets = ["qkv_proj"] if model.config.model_type == "phi3" else ["q_proj", "v_proj"]
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=targets,
                                                 task_type="CAUSAL_LM"))
        torch.manual_seed(1)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_A" in name:
                    p.uniform_(-p.size(1) ** -0.5, p.size(1) ** -0.5)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0, foreach=False)
    torch.manual_seed(0)
    ids = torch.randint(3, model.config.vocab_size, (batch, seq))
    labels = ids.roll(-1, 1)
    losses = []
    for _ in range(steps):
        logits = model(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1),
                                                 reduction="sum") / ids.numel()
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    print(json.dumps({"losses": losses}))


if __name__ == "__main__":
    main()
