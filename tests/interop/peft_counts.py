"""PEFT oracle for trainable-parameter counts: builds each real model's architecture on the meta device (no
weights) from its config.json, applies LoRA with PEFT (with trainable_token_indices when the case gives token
indices: the list form for a tied head, the dict form with lm_head for an untied one), and prints the
trainable and total counts as JSON.

usage: peft_counts.py CASES.json   (a list of {"name", "config", "rank", "targets", "token_indices"})
"""
import json
import sys

import torch
import transformers
from peft import LoraConfig, get_peft_model


def main():
    out = {}
    for case in json.load(open(sys.argv[1])):
        config = transformers.AutoConfig.from_pretrained(case["config"])
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        base = sum(p.numel() for p in model.parameters())
        indices = case.get("token_indices") or None
        if indices and not config.tie_word_embeddings:
            embedding = next(n for n, m in model.named_modules() if m is model.get_input_embeddings())
            indices = {embedding.split(".")[-1]: indices, "lm_head": indices}
        peft = get_peft_model(model, LoraConfig(r=case["rank"], lora_alpha=16, target_modules=case["targets"],
                                                task_type="CAUSAL_LM", trainable_token_indices=indices))
        trainable, total = peft.get_nb_trainable_parameters()
        out[case["name"]] = {"base": base, "trainable": trainable, "total": total}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
