"""Oracle for test_train_interop: the training steps of `tunebench bench train` done by transformers, PEFT and
torch.optim.AdamW (its default single-tensor path), printing each step's loss as JSON.

usage: train_oracle.py MODEL_DIR full|lora BATCH SEQ STEPS LR CLIP
Random tokens from torch.manual_seed(0) (ids = randint(3, vocab, (batch, seq)), labels = ids rolled by one),
AdamW at learning rate LR without weight decay, the summed cross-entropy over batch x seq, gradient clipping at CLIP (0:
none); LoRA r 8, alpha 16 on q_proj and v_proj, its A matrices drawn again in parameter order from seed 1.
"""
import json
import sys

import torch
import transformers
from peft import LoraConfig, get_peft_model


def main():
    path, method = sys.argv[1], sys.argv[2]
    batch, seq, steps = map(int, sys.argv[3:6])
    lr, clip = float(sys.argv[6]), float(sys.argv[7])
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if method == "lora":
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                                 target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
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
