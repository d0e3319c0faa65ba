"""PEFT oracle for default LoRA targets: peft's own table (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING)
for each model_type asked, and the targets and trainable count PEFT resolves when a LoraConfig names none, on real
architectures built on the meta device from their config.json. Prints JSON.

usage: peft_defaults.py CASES.json   ({"model_types": [...], "configs": [{"name", "config", "rank"}]})
"""
import json
import sys

import torch
import transformers
from peft import LoraConfig, get_peft_model
from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as MAPPING


def main():
    cases = json.load(open(sys.argv[1]))
    out = {"mapping": {t: MAPPING.get(t) for t in cases["model_types"]}, "resolved": {}}
    for case in cases["configs"]:
        config = transformers.AutoConfig.from_pretrained(case["config"])
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        peft = get_peft_model(model, LoraConfig(r=case["rank"], lora_alpha=16, task_type="CAUSAL_LM"))
        trainable, _ = peft.get_nb_trainable_parameters()
        targets = sorted(peft.peft_config["default"].target_modules)
        out["resolved"][case["name"]] = {"model_type": config.model_type, "targets": targets,
                                         "trainable": trainable}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
